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

/** IPv4 carried inside IPv6 (`::ffff:a.b.c.d` mapped, `::a.b.c.d` compatible, NAT64 `64:ff9b::/96`): the IPv4 address, else null. */
export function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted) return dotted[1]!;
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const hi = parseInt(hex[1]!, 16);
    const lo = parseInt(hex[2]!, 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

/** Why an address may not be reached, or null when it is a public unicast address. */
export function blockedReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4) return blockedReason(v4);
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
