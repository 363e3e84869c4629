import { BlockList, isIP } from 'node:net';

/**
 * Pure address rules of the outbound (SSRF) guard: which IP addresses a user-supplied URL may
 * reach, and how the operator's OUTBOUND_ALLOW_LIST (host names or CIDRs) overrides them.
 */

/** Ranges no user-supplied URL may reach, with the reason reported when one is hit. */
const BLOCKED_V4: [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (includes the cloud metadata address 169.254.169.254)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];
const BLOCKED_V6: [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'local-use NAT64'],
  ['100::', 64, 'discard-only'],
  ['2001:db8::', 32, 'documentation'],
  ['2002::', 16, '6to4'],
  ['2001::', 32, 'Teredo'],
  ['fc00::', 7, 'unique local (private)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
  ['fd00:ec2::254', 128, 'cloud metadata'],
];

const blocked: { list: BlockList; reason: string; type: 'ipv4' | 'ipv6' }[] = [
  ...BLOCKED_V4.map(([net, prefix, reason]) => ({ net, prefix, reason, type: 'ipv4' as const })),
  ...BLOCKED_V6.map(([net, prefix, reason]) => ({ net, prefix, reason, type: 'ipv6' as const })),
].map(({ net, prefix, reason, type }) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { list, reason, type };
});

/** The eight 16-bit groups of an IPv6 address in any textual form (`::`, trailing dotted IPv4, zone), else null. */
export function ipv6Groups(address: string): number[] | null {
  let text = address.toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(text) !== 6) return null;
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const groups = tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 ? groups : null;
}

const v4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * IPv4 carried inside IPv6, decided on the numeric address whatever its spelling: mapped
 * `::ffff:0:0/96`, translated `::ffff:0:0:0/96`, compatible `::/96` (but `::` and `::1`), NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`. The IPv4 address, else null.
 */
export function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (!g) return null;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4Of(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4Of(g[6]!, g[7]!);
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4Of(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4Of(g[6]!, g[7]!);
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!);
  return null;
}

/** Why an address may not be reached, or null when it is a public unicast address. */
export function blockedReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    // the IPv4 inside decides first; the IPv6 ranges below still apply (all of 6to4 and Teredo are refused)
    const v4 = embeddedIpv4(address);
    const inner = v4 ? blockedReason(v4) : null;
    if (inner) return inner;
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const b of blocked) if (b.type === type && b.list.check(address, type)) return b.reason;
  return null;
}

/** The parsed OUTBOUND_ALLOW_LIST: host names (exact, case-insensitive) and CIDRs / single addresses. */
export interface AllowList {
  hosts: Set<string>;
  networks: BlockList;
}

export function parseAllowList(entries: readonly string[]): AllowList {
  const hosts = new Set<string>();
  const networks = new BlockList();
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase().replace(/^\[|\]$/g, '');
    if (!entry) continue;
    const slash = entry.indexOf('/');
    const addr = slash >= 0 ? entry.slice(0, slash) : entry;
    const family = isIP(addr);
    if (family === 0) {
      if (slash >= 0) throw new Error(`OUTBOUND_ALLOW_LIST: "${raw}" is neither a host name nor a CIDR`);
      hosts.add(entry.replace(/\.$/, ''));
      continue;
    }
    const type = family === 4 ? 'ipv4' : 'ipv6';
    const prefix = slash >= 0 ? Number(entry.slice(slash + 1)) : family === 4 ? 32 : 128;
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) throw new Error(`OUTBOUND_ALLOW_LIST: bad prefix in "${raw}"`);
    networks.addSubnet(addr, prefix, type);
    // a literal address is also matched as the URL's host name
    if (slash < 0) hosts.add(addr);
  }
  return { hosts, networks };
}

/** The host name, lowercased, without brackets or a trailing dot. */
export function normalizeHost(hostname: string): string {
  return hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

export function hostAllowed(allow: AllowList, hostname: string): boolean {
  return allow.hosts.has(normalizeHost(hostname));
}

export function addressAllowed(allow: AllowList, address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (allow.networks.check(address, family === 4 ? 'ipv4' : 'ipv6')) return true;
  const v4 = family === 6 ? embeddedIpv4(address) : null;
  return v4 !== null && allow.networks.check(v4, 'ipv4');
}

/**
 * Decide one resolved address: allowed when the host name itself is allow-listed, when the address
 * is inside an allow-listed network, or when it is a public unicast address.
 */
export function checkAddress(allow: AllowList, hostname: string, address: string): { ok: true } | { ok: false; reason: string } {
  if (hostAllowed(allow, hostname) || addressAllowed(allow, address)) return { ok: true };
  const reason = blockedReason(address);
  return reason ? { ok: false, reason } : { ok: true };
}
