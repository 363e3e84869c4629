// Ruleset generation: config + rule lists + detected bridges -> one nft script (native syntax).
// Pure: no I/O. The script is one atomic batch: `add table` makes the `delete` safe on first run,
// then the table is recreated whole, so the kernel swaps the old table for the new one or refuses both.
import { isIPv4 } from 'node:net';
import type { FirewallConfig } from './config.ts';
import { networkOf, unmapAddress } from './net.ts';
import type { RuleSet } from './rules.ts';

/** Our one table (inet family); nothing else in the kernel ruleset is ever touched. */
export const TABLE = 'task_firewall';
export const LOG_PREFIX = 'task-firewall';
const RFC1918 = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'];

export interface Bridge {
  name: string;
  /** Networks on the bridge in CIDR notation (both families). */
  networks: string[];
}

export interface RulesetInput {
  config: FirewallConfig;
  rules: RuleSet;
  /** Container bridges found on the host (used only when `container.enabled`). */
  bridges: Bridge[];
  /** Interfaces facing the outside: the only ones the bogon filter applies to (`eth*` globs allowed). */
  external?: string[];
}

/** Split addresses into single IPs and networks per family, deduplicated, in a stable order. */
export function splitAddresses(list: readonly string[]) {
  const out = { v4: new Set<string>(), v4net: new Set<string>(), v6: new Set<string>(), v6net: new Set<string>() };
  for (const raw of list) {
    const a = unmapAddress(raw.trim());
    const [addr = ''] = a.split('/');
    const v4 = isIPv4(addr);
    if (a.includes('/')) (v4 ? out.v4net : out.v6net).add(networkOf(a));
    else (v4 ? out.v4 : out.v6).add(a.toLowerCase());
  }
  return { v4: [...out.v4], v4net: [...out.v4net], v6: [...out.v6], v6net: [...out.v6net] };
}

/** easywall writes ranges as `8000:9000`; nft wants `8000-9000`. */
export const nftPort = (p: string) => p.replace(':', '-');

const q = (s: string) => `"${s.replace(/["\\]/g, '')}"`;
const setOf = (items: readonly (string | number)[]) => `{ ${items.join(', ')} }`;

interface Chain {
  name: string;
  head?: string;
  rules: string[];
}

class Builder {
  readonly sets: string[] = [];
  readonly chains: Chain[] = [];
  readonly logLimitDefault: number;
  constructor(logLimitDefault: number) {
    this.logLimitDefault = logLimitDefault;
  }

  set(name: string, type: 'ipv4_addr' | 'ipv6_addr', opts: { flags?: string; size?: number; elements?: string[] } = {}) {
    const parts = [`type ${type};`];
    if (opts.flags) parts.push(`flags ${opts.flags};`);
    if (opts.flags?.includes('interval')) parts.push('auto-merge;');
    if (opts.size) parts.push(`size ${opts.size};`);
    if (opts.elements?.length) parts.push(`elements = ${setOf(opts.elements)};`);
    this.sets.push(`\tset ${name} { ${parts.join(' ')} }`);
  }

  /**
   * The verdict of a protection rule: a counted drop, or (when logging) a jump to `<module>-drop`,
   * a chain that logs at most `limit` entries per minute and then drops, so the meter runs once.
   */
  drop(module: string, log: boolean, limit = this.logLimitDefault): string {
    if (!log) return 'counter drop';
    const name = `${module}-drop`;
    if (!this.chains.some((c) => c.name === name)) {
      this.chains.push({
        name,
        rules: [`limit rate ${limit}/minute burst ${limit} packets counter log prefix ${q(`${LOG_PREFIX} ${module}: `)}`, 'drop'],
      });
    }
    return `counter jump ${name}`;
  }
}

/** Build the complete nft script for one apply. */
export function buildRuleset({ config, rules, bridges, external = [] }: RulesetInput): string {
  const fw = config.firewall;
  const v6 = config.ipv6.enabled;
  const b = new Builder(fw.log_blocked_connections_limit);
  const input: string[] = [];
  const pre: string[] = [];
  const nat: string[] = [];
  const meterSet = (name: string, fam: 'ipv4_addr' | 'ipv6_addr') => b.set(name, fam, { flags: 'dynamic,timeout', size: 65535 });
  const countSet = (name: string, fam: 'ipv4_addr' | 'ipv6_addr') => b.set(name, fam, { flags: 'dynamic', size: 65535 });

  // Fragments: below conntrack's reassembly (-400), or the input hook never sees one.
  if (fw.drop_fragments) {
    pre.push('iif "lo" return');
    const verdict = b.drop('fragments', fw.drop_fragments_log);
    pre.push(`ip frag-off & 0x3fff != 0 ${verdict}`);
    if (v6) pre.push(`exthdr frag exists ${verdict}`);
  }

  input.push('iif "lo" accept');
  // IPv6 switched off: no IPv6 rules, and no IPv6 traffic slips through the family-agnostic accepts.
  if (!v6) input.push('meta nfproto ipv6 counter drop');

  // Lists: single IPs in hash sets, networks in interval sets (one lookup each, however long the list).
  const black = splitAddresses(rules.blacklist);
  const white = splitAddresses(rules.whitelist);
  b.set('blacklist-v4', 'ipv4_addr', { elements: black.v4 });
  b.set('blacklist-net-v4', 'ipv4_addr', { flags: 'interval', elements: black.v4net });
  b.set('whitelist-v4', 'ipv4_addr', { elements: white.v4 });
  b.set('whitelist-net-v4', 'ipv4_addr', { flags: 'interval', elements: white.v4net });
  if (v6) {
    b.set('blacklist-v6', 'ipv6_addr', { elements: black.v6 });
    b.set('blacklist-net-v6', 'ipv6_addr', { flags: 'interval', elements: black.v6net });
    b.set('whitelist-v6', 'ipv6_addr', { elements: white.v6 });
    b.set('whitelist-net-v6', 'ipv6_addr', { flags: 'interval', elements: white.v6net });
  }
  const blVerdict = b.drop('blacklist', fw.log_blacklist_connections, fw.log_blacklist_connections_limit);
  input.push(`ip saddr @blacklist-v4 ${blVerdict}`, `ip saddr @blacklist-net-v4 ${blVerdict}`);
  if (v6) input.push(`ip6 saddr @blacklist-v6 ${blVerdict}`, `ip6 saddr @blacklist-net-v6 ${blVerdict}`);
  input.push('ip saddr @whitelist-v4 accept', 'ip saddr @whitelist-net-v4 accept');
  if (v6) input.push('ip6 saddr @whitelist-v6 accept', 'ip6 saddr @whitelist-net-v6 accept');

  // Container networks: detected bridges (when enabled) plus the operator's custom networks.
  const containerNets: string[] = [...config.container.custom_networks];
  const bridgeNames = config.container.enabled ? bridges.map((x) => x.name) : [];
  if (config.container.enabled && config.container.allow_bridge_networks) {
    for (const br of bridges) containerNets.push(...br.networks);
  }
  const nets = splitAddresses(containerNets);
  if (nets.v4net.length) input.push(`ip saddr ${setOf(nets.v4net)} accept`);
  if (v6 && nets.v6net.length) input.push(`ip6 saddr ${setOf(nets.v6net)} accept`);

  if (fw.port_scan) {
    const verdict = b.drop('portscan', fw.port_scan_log);
    const all = '(fin|syn|rst|psh|ack|urg)';
    // NULL, FIN, XMAS, ALL, SYN+FIN, SYN+RST, RST+FIN probes.
    const probes: [string, string][] = [
      [all, '0x0'],
      [all, 'fin'],
      [all, 'fin|psh|urg'],
      [all, 'fin|syn|rst|psh|ack|urg'],
      ['(fin|syn)', 'fin|syn'],
      ['(syn|rst)', 'syn|rst'],
      ['(fin|rst)', 'fin|rst'],
    ];
    for (const [mask, value] of probes) input.push(`tcp flags & ${mask} == ${value} ${verdict}`);
  }

  // Per-source meters run before `established accept`, or only a flow's first packet is metered.
  // The RST meter runs before the invalid drop, which would otherwise swallow out-of-window RSTs.
  if (fw.tcp_rst_flood) {
    const n = fw.tcp_rst_flood_limit;
    const verdict = b.drop('tcprst', fw.tcp_rst_flood_log);
    meterSet('tcprst-v4', 'ipv4_addr');
    input.push(`tcp flags & rst == rst update @tcprst-v4 { ip saddr timeout 1m limit rate over ${n}/second burst ${n} packets } ${verdict}`);
    if (v6) {
      meterSet('tcprst-v6', 'ipv6_addr');
      input.push(`tcp flags & rst == rst update @tcprst-v6 { ip6 saddr timeout 1m limit rate over ${n}/second burst ${n} packets } ${verdict}`);
    }
  }

  if (fw.drop_invalid_packets) input.push(`ct state invalid ${b.drop('invalid', fw.drop_invalid_packets_log)}`);

  if (fw.icmp_flood) {
    const n = fw.icmp_flood_connection_limit;
    const verdict = b.drop('icmpflood', fw.icmp_flood_log, fw.icmp_flood_log_limit);
    meterSet('icmpflood-v4', 'ipv4_addr');
    input.push(`icmp type echo-request update @icmpflood-v4 { ip saddr timeout 1m limit rate over ${n}/second burst ${n} packets } ${verdict}`);
    if (v6) {
      meterSet('icmpflood-v6', 'ipv6_addr');
      input.push(`icmpv6 type echo-request update @icmpflood-v6 { ip6 saddr timeout 1m limit rate over ${n}/second burst ${n} packets } ${verdict}`);
    }
  }

  if (fw.syn_flood) {
    const n = fw.syn_flood_limit;
    const verdict = b.drop('synflood', fw.syn_flood_log);
    const syn = 'tcp flags & (fin|syn|rst|ack) == syn';
    meterSet('synflood-v4', 'ipv4_addr');
    input.push(`${syn} update @synflood-v4 { ip saddr timeout 1m limit rate over ${n}/second burst ${2 * n} packets } ${verdict}`);
    if (v6) {
      meterSet('synflood-v6', 'ipv6_addr');
      input.push(`${syn} update @synflood-v6 { ip6 saddr timeout 1m limit rate over ${n}/second burst ${2 * n} packets } ${verdict}`);
    }
  }

  if (fw.connection_limit_per_ip) {
    const n = fw.connection_limit_max;
    countSet('connlimit-v4', 'ipv4_addr');
    input.push(`ct state new add @connlimit-v4 { ip saddr ct count over ${n} } counter drop`);
    if (v6) {
      countSet('connlimit-v6', 'ipv6_addr');
      input.push(`ct state new add @connlimit-v6 { ip6 saddr ct count over ${n} } counter drop`);
    }
  }

  const sshPorts = sshPortsOf(rules);
  if (fw.ssh_brute_force) {
    const n = fw.ssh_brute_force_connection_limit;
    const verdict = b.drop('sshbrute', fw.ssh_brute_force_log, fw.ssh_brute_force_log_limit);
    const ports = setOf(sshPorts);
    countSet('sshconn-v4', 'ipv4_addr');
    input.push(`tcp dport ${ports} ct state new add @sshconn-v4 { ip saddr ct count over ${n} } ${verdict}`);
    if (v6) {
      countSet('sshconn-v6', 'ipv6_addr');
      input.push(`tcp dport ${ports} ct state new add @sshconn-v6 { ip6 saddr ct count over ${n} } ${verdict}`);
    }
  }

  input.push('ct state established,related accept');

  // Neighbour discovery before the multicast drop: NS and RA travel to multicast addresses.
  if (v6 && config.ipv6.icmp_allow_neighbor_advertisement) input.push('icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept');
  if (v6 && config.ipv6.icmp_allow_router_advertisement) input.push('icmpv6 type nd-router-advert accept');

  // Link-layer classes go before the ICMP accepts, or an ICMP broadcast would be accepted first.
  if (fw.drop_broadcast) input.push('meta pkttype broadcast counter drop');
  if (fw.drop_multicast) input.push('meta pkttype multicast counter drop');
  if (fw.drop_anycast) input.push('fib daddr type anycast counter drop');

  // Bogon: only on interfaces named external (a LAN with RFC 1918 addresses is not one), never on
  // container bridges, and after `established` so it cannot cut a live session.
  const outside = fw.bogon_filter ? external.filter((x) => x !== 'lo' && !bridgeNames.includes(x)) : [];
  if (outside.length) {
    const verdict = b.drop('bogon', fw.bogon_filter_log);
    for (const ifname of outside) input.push(`iifname ${q(ifname)} ip saddr ${setOf(RFC1918)} ${verdict}`);
  }

  input.push('icmp type { echo-request, destination-unreachable, time-exceeded, parameter-problem } accept');
  if (v6) input.push('icmpv6 type { echo-request, destination-unreachable, packet-too-big, time-exceeded, parameter-problem, nd-router-solicit } accept');

  const tcp = rules.tcp.map((r) => nftPort(r.port));
  const udp = rules.udp.map((r) => nftPort(r.port));
  for (const f of rules.forwarding) {
    nat.push(`${f.protocol} dport ${f.source_port} redirect to :${f.dest_port}`);
    (f.protocol === 'tcp' ? tcp : udp).push(String(f.dest_port));
  }
  if (tcp.length) input.push(`tcp dport ${setOf(unique(tcp))} accept`);
  if (udp.length) input.push(`udp dport ${setOf(unique(udp))} accept`);

  input.push(...rules.custom);

  if (fw.log_blocked_connections) {
    const n = fw.log_blocked_connections_limit;
    input.push(`limit rate ${n}/minute burst ${n} packets counter log prefix ${q(`${LOG_PREFIX} blocked: `)}`);
  }

  const chains: Chain[] = [];
  if (pre.length) chains.push({ name: 'prerouting', head: 'type filter hook prerouting priority -450; policy accept;', rules: pre });
  if (nat.length) chains.push({ name: 'prerouting-nat', head: 'type nat hook prerouting priority dstnat; policy accept;', rules: nat });
  chains.push({ name: 'input', head: 'type filter hook input priority filter; policy drop;', rules: input });
  chains.push(...b.chains);

  const body = [
    ...b.sets,
    ...chains.map((c) => [`\tchain ${c.name} {`, ...(c.head ? [`\t\t${c.head}`] : []), ...c.rules.map((r) => `\t\t${r}`), '\t}'].join('\n')),
  ];
  return [`add table inet ${TABLE}`, `delete table inet ${TABLE}`, `table inet ${TABLE} {`, ...body, '}', ''].join('\n');
}

/** SSH ports: 22 plus every TCP rule flagged `ssh`. */
export function sshPortsOf(rules: RuleSet): string[] {
  return unique(['22', ...rules.tcp.filter((r) => r.ssh).map((r) => nftPort(r.port))]);
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}

/** Script that removes our table (only ours) — used when the daemon is told to stand down. */
export function removeTableScript(): string {
  return `add table inet ${TABLE}\ndelete table inet ${TABLE}\n`;
}
