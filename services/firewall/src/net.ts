// Address helpers (pure): CIDR normalisation so sets never see host bits.
import { isIPv4, isIPv6 } from 'node:net';

export function v6ToBigInt(addr: string): bigint {
  let a = addr;
  // Embedded IPv4 tail (::ffff:1.2.3.4): rewrite to two hex groups.
  const m = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (m?.[1]) {
    const o = m[1].split('.').map(Number);
    a = a.slice(0, -m[1].length) + `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const [head = '', tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || '0', 16)), 0n);
}

function bigIntToV6(n: bigint): string {
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((n >> BigInt(i * 16)) & 0xffffn).toString(16));
  // Compress the longest zero run (RFC 5952 style) for readable, canonical set elements.
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

/** `10.1.2.3/16` -> `10.1.0.0/16`; `2001:db8::1/32` -> `2001:db8::/32`. Returns input if unparseable. */
export function networkOf(cidr: string): string {
  const [addr = '', p = ''] = cidr.split('/');
  const bits = Number(p);
  if (isIPv4(addr) && bits >= 0 && bits <= 32) {
    const n = addr.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    const net = (n & mask) >>> 0;
    return `${[24, 16, 8, 0].map((s) => (net >>> s) & 255).join('.')}/${bits}`;
  }
  if (isIPv6(addr) && bits >= 0 && bits <= 128) {
    const mask = bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(128 - bits);
    return `${bigIntToV6(v6ToBigInt(addr) & mask)}/${bits}`;
  }
  return cidr;
}

/** Link-local networks are on every interface; whitelisting them would open every link. */
export function isLinkLocal(cidr: string): boolean {
  return /^fe[89ab]/i.test(cidr) || cidr.startsWith('169.254.');
}

/**
 * IPv4-mapped IPv6 (`::ffff:10.0.0.2`, `::ffff:a00:2`, `::ffff:10.0.0.0/104`) -> the IPv4 form the
 * kernel matches (`ip saddr`); a mapped entry in an IPv6 set would never match real IPv4 traffic.
 */
export function unmapAddress(value: string): string {
  const [addr = '', prefix] = value.split('/');
  if (!isIPv6(addr)) return value;
  const n = v6ToBigInt(addr);
  if (n >> 32n !== 0xffffn) return value;
  if (prefix !== undefined && Number(prefix) < 96) return value;
  const v4 = [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
  return prefix === undefined ? v4 : `${v4}/${Number(prefix) - 96}`;
}
