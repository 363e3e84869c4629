// Ruleset generation: config + rule lists + detected bridges -> a model of our table (sets, chains),
// rendered either as the full script (`add table` / `delete table` / `table { … }`: the kernel swaps the
// whole table or refuses) or as an in-place update of the table the kernel holds (`updateScript`), which
// keeps the per-source meters (dynamic sets) whose definition did not change. Pure: no I/O.
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

/** A set of our table. `meter`: a dynamic set the rules fill per source (its elements are the meter's state). */
export interface NftSet {
  name: string;
  type: 'ipv4_addr' | 'ipv6_addr';
  flags: string[];
  size?: number;
  /** For meters: the meter's parameters, so a changed limit recreates the set (its elements carry the old limit). */
  comment?: string;
  elements: string[];
  meter: boolean;
}

/** A chain; `base` for chains on a hook. */
export interface NftChain {
  name: string;
  base?: { type: 'filter' | 'nat'; hook: string; priority: string; policy: 'accept' | 'drop' };
  rules: string[];
}

export interface Ruleset {
  sets: NftSet[];
  chains: NftChain[];
}

class Builder {
  readonly sets: NftSet[] = [];
  readonly chains: NftChain[] = [];
  readonly logLimitDefault: number;
  constructor(logLimitDefault: number) {
    this.logLimitDefault = logLimitDefault;
  }

  set(name: string, type: NftSet['type'], opts: { flags?: string[]; size?: number; comment?: string; elements?: string[]; meter?: boolean } = {}) {
    this.sets.push({ name, type, flags: opts.flags ?? [], size: opts.size, comment: opts.comment, elements: opts.elements ?? [], meter: opts.meter ?? false });
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

/** Build the complete nft script for one apply (the full-replace form; see `updateScript` for in place). */
export function buildRuleset(input: RulesetInput): string {
  return renderFull(buildModel(input));
}

/**
 * Every rate meter is a token bucket of `n` packets refilled at `n` per second: a source's first second
 * (or its first after a quiet second) may pass up to 2n packets, every later second n. The bucket
 * (burst) never exceeds the limit, so short bursts of a legitimate client (a browser opening a few
 * connections at once) pass while a flood is held to the limit.
 */
const rateMeter = (saddr: 'ip' | 'ip6', set: string, n: number) => `update @${set} { ${saddr} saddr timeout 1m limit rate over ${n}/second burst ${n} packets }`;
const rateComment = (n: number) => `meter: limit rate over ${n}/second burst ${n} packets`;

/**
 * ICMP types the host needs whatever the rate, never counted by the ICMP flood meter: IPv4
 * "fragmentation needed" (path MTU discovery), ICMPv6 packet-too-big (path MTU discovery), neighbour
 * solicitation/advertisement and router advertisement (neighbour discovery, SLAAC).
 */
export const ICMP_FLOOD_EXEMPT_V6 = ['packet-too-big', 'nd-neighbor-solicit', 'nd-neighbor-advert', 'nd-router-advert'];

/** Build the model of our table for one apply. */
export function buildModel({ config, rules, bridges, external = [] }: RulesetInput): Ruleset {
  const fw = config.firewall;
  const v6 = config.ipv6.enabled;
  const b = new Builder(fw.log_blocked_connections_limit);
  const input: string[] = [];
  const pre: string[] = [];
  const nat: string[] = [];
  const meterSet = (name: string, fam: NftSet['type'], comment: string) => b.set(name, fam, { flags: ['dynamic', 'timeout'], size: 65535, comment, meter: true });
  const countSet = (name: string, fam: NftSet['type'], n: number) => b.set(name, fam, { flags: ['dynamic'], size: 65535, comment: `meter: ct count over ${n}`, meter: true });

  // Fragments: below conntrack's reassembly (-400), or the input hook never sees one.
  if (fw.drop_fragments) {
    pre.push('iif "lo" return');
    const verdict = b.drop('fragments', fw.drop_fragments_log);
    pre.push(`ip frag-off & 0x3fff != 0 ${verdict}`);
    if (v6) pre.push(`exthdr frag exists ${verdict}`);
  }

  input.push('iif "lo" accept');
  // IPv6 switched off: our table leaves IPv6 alone (no IPv6 rule or set; other tables still apply).
  if (!v6) input.push('meta nfproto ipv6 accept');

  // Lists: single IPs in hash sets, networks in interval sets (one lookup each, however long the list).
  const black = splitAddresses(rules.blacklist);
  const white = splitAddresses(rules.whitelist);
  b.set('blacklist-v4', 'ipv4_addr', { elements: black.v4 });
  b.set('blacklist-net-v4', 'ipv4_addr', { flags: ['interval'], elements: black.v4net });
  b.set('whitelist-v4', 'ipv4_addr', { elements: white.v4 });
  b.set('whitelist-net-v4', 'ipv4_addr', { flags: ['interval'], elements: white.v4net });
  if (v6) {
    b.set('blacklist-v6', 'ipv6_addr', { elements: black.v6 });
    b.set('blacklist-net-v6', 'ipv6_addr', { flags: ['interval'], elements: black.v6net });
    b.set('whitelist-v6', 'ipv6_addr', { elements: white.v6 });
    b.set('whitelist-net-v6', 'ipv6_addr', { flags: ['interval'], elements: white.v6net });
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
    meterSet('tcprst-v4', 'ipv4_addr', rateComment(n));
    input.push(`tcp flags & rst == rst ${rateMeter('ip', 'tcprst-v4', n)} ${verdict}`);
    if (v6) {
      meterSet('tcprst-v6', 'ipv6_addr', rateComment(n));
      input.push(`tcp flags & rst == rst ${rateMeter('ip6', 'tcprst-v6', n)} ${verdict}`);
    }
  }

  if (fw.drop_invalid_packets) input.push(`ct state invalid ${b.drop('invalid', fw.drop_invalid_packets_log)}`);

  if (fw.icmp_flood) {
    const n = fw.icmp_flood_connection_limit;
    const verdict = b.drop('icmpflood', fw.icmp_flood_log, fw.icmp_flood_log_limit);
    // Every ICMP packet of a source counts (echo, errors, replies to the host's own pings), except
    // the messages in ICMP_FLOOD_EXEMPT_V6 and IPv4 "fragmentation needed", which are never dropped here.
    meterSet('icmpflood-v4', 'ipv4_addr', rateComment(n));
    input.push(`icmp type != destination-unreachable ${rateMeter('ip', 'icmpflood-v4', n)} ${verdict}`);
    input.push(`icmp type destination-unreachable icmp code != frag-needed ${rateMeter('ip', 'icmpflood-v4', n)} ${verdict}`);
    if (v6) {
      meterSet('icmpflood-v6', 'ipv6_addr', rateComment(n));
      input.push(`icmpv6 type != ${setOf(ICMP_FLOOD_EXEMPT_V6)} ${rateMeter('ip6', 'icmpflood-v6', n)} ${verdict}`);
    }
  }

  if (fw.syn_flood) {
    const n = fw.syn_flood_limit;
    const verdict = b.drop('synflood', fw.syn_flood_log);
    const syn = 'tcp flags & (fin|syn|rst|ack) == syn';
    meterSet('synflood-v4', 'ipv4_addr', rateComment(n));
    input.push(`${syn} ${rateMeter('ip', 'synflood-v4', n)} ${verdict}`);
    if (v6) {
      meterSet('synflood-v6', 'ipv6_addr', rateComment(n));
      input.push(`${syn} ${rateMeter('ip6', 'synflood-v6', n)} ${verdict}`);
    }
  }

  if (fw.connection_limit_per_ip) {
    const n = fw.connection_limit_max;
    countSet('connlimit-v4', 'ipv4_addr', n);
    input.push(`ct state new add @connlimit-v4 { ip saddr ct count over ${n} } counter drop`);
    if (v6) {
      countSet('connlimit-v6', 'ipv6_addr', n);
      input.push(`ct state new add @connlimit-v6 { ip6 saddr ct count over ${n} } counter drop`);
    }
  }

  const sshPorts = sshPortsOf(rules);
  if (fw.ssh_brute_force) {
    const n = fw.ssh_brute_force_connection_limit;
    const verdict = b.drop('sshbrute', fw.ssh_brute_force_log, fw.ssh_brute_force_log_limit);
    const ports = setOf(sshPorts);
    countSet('sshconn-v4', 'ipv4_addr', n);
    input.push(`tcp dport ${ports} ct state new add @sshconn-v4 { ip saddr ct count over ${n} } ${verdict}`);
    if (v6) {
      countSet('sshconn-v6', 'ipv6_addr', n);
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
    // IPv6 switched off: redirect IPv4 only (the inet nat chain would otherwise redirect IPv6 too).
    nat.push(`${v6 ? '' : 'meta nfproto ipv4 '}${f.protocol} dport ${f.source_port} redirect to :${f.dest_port}`);
    (f.protocol === 'tcp' ? tcp : udp).push(String(f.dest_port));
  }
  if (tcp.length) input.push(`tcp dport ${setOf(unique(tcp))} accept`);
  if (udp.length) input.push(`udp dport ${setOf(unique(udp))} accept`);

  input.push(...rules.custom);

  if (fw.log_blocked_connections) {
    const n = fw.log_blocked_connections_limit;
    input.push(`limit rate ${n}/minute burst ${n} packets counter log prefix ${q(`${LOG_PREFIX} blocked: `)}`);
  }

  const chains: NftChain[] = [];
  if (pre.length) chains.push({ name: 'prerouting', base: { type: 'filter', hook: 'prerouting', priority: '-450', policy: 'accept' }, rules: pre });
  if (nat.length) chains.push({ name: 'prerouting-nat', base: { type: 'nat', hook: 'prerouting', priority: 'dstnat', policy: 'accept' }, rules: nat });
  chains.push({ name: 'input', base: { type: 'filter', hook: 'input', priority: 'filter', policy: 'drop' }, rules: input });
  chains.push(...b.chains);
  return { sets: b.sets, chains };
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

const PRIORITY: Record<string, number> = { filter: 0, dstnat: -100 };

function setDecl(x: NftSet, withElements: boolean): string {
  const parts = [`type ${x.type};`];
  if (x.flags.length) parts.push(`flags ${x.flags.join(',')};`);
  if (x.flags.includes('interval')) parts.push('auto-merge;');
  if (x.size) parts.push(`size ${x.size};`);
  if (x.comment) parts.push(`comment ${q(x.comment)};`);
  if (withElements && x.elements.length) parts.push(`elements = ${setOf(x.elements)};`);
  return `{ ${parts.join(' ')} }`;
}

const chainHead = (c: NftChain) => (c.base ? `type ${c.base.type} hook ${c.base.hook} priority ${c.base.priority}; policy ${c.base.policy};` : undefined);

/** The full-replace script: `add table` makes the `delete` safe on first run, then the table is recreated whole. */
export function renderFull(r: Ruleset): string {
  const body = [
    ...r.sets.map((x) => `\tset ${x.name} ${setDecl(x, true)}`),
    ...r.chains.map((c) => {
      const head = chainHead(c);
      return [`\tchain ${c.name} {`, ...(head ? [`\t\t${head}`] : []), ...c.rules.map((l) => `\t\t${l}`), '\t}'].join('\n');
    }),
  ];
  return [`add table inet ${TABLE}`, `delete table inet ${TABLE}`, `table inet ${TABLE} {`, ...body, '}', ''].join('\n');
}

/** The inverse of `renderFull` (the confirmed ruleset is stored as its full script). */
export function parseFull(script: string): Ruleset {
  const r: Ruleset = { sets: [], chains: [] };
  let chain: NftChain | undefined;
  for (const line of script.split('\n')) {
    const set = /^\tset (\S+) \{ type (ipv4_addr|ipv6_addr); (.*)\}$/.exec(line);
    if (set) {
      const rest = set[3]!;
      const flags = /flags ([^;]+);/.exec(rest)?.[1]?.split(',') ?? [];
      const size = /size (\d+);/.exec(rest)?.[1];
      const comment = /comment "([^"]*)";/.exec(rest)?.[1];
      const elements = /elements = \{ (.*) \}; $/.exec(rest)?.[1]?.split(', ') ?? [];
      r.sets.push({ name: set[1]!, type: set[2] as NftSet['type'], flags, size: size ? Number(size) : undefined, comment, elements, meter: flags.includes('dynamic') });
      continue;
    }
    const open = /^\tchain (\S+) \{$/.exec(line);
    if (open) {
      chain = { name: open[1]!, rules: [] };
      r.chains.push(chain);
      continue;
    }
    if (line === '\t}') chain = undefined;
    else if (chain && line.startsWith('\t\t')) {
      const head = /^\t\ttype (filter|nat) hook (\S+) priority (\S+); policy (accept|drop);$/.exec(line);
      if (head && !chain.base && chain.rules.length === 0) chain.base = { type: head[1] as 'filter', hook: head[2]!, priority: head[3]!, policy: head[4] as 'accept' };
      else chain.rules.push(line.slice(2));
    }
  }
  return r;
}

/** What the kernel holds of our table, without set elements or rules (`nft -j -t list table`). */
export interface KernelLayout {
  sets: { name: string; type: string; flags: string[]; size?: number; comment?: string }[];
  chains: { name: string; type?: string; hook?: string; prio?: number; policy?: string }[];
}

/** Read a `-j -t list table` reply into a layout. */
export function kernelLayoutOf(json: unknown): KernelLayout {
  const items = ((json as { nftables?: Record<string, Record<string, unknown>>[] }).nftables ?? []);
  const layout: KernelLayout = { sets: [], chains: [] };
  for (const o of items) {
    if (o.set) {
      const x = o.set;
      layout.sets.push({ name: String(x.name), type: String(x.type), flags: ((x.flags as string[] | undefined) ?? []).map(String), size: x.size as number | undefined, comment: x.comment as string | undefined });
    } else if (o.chain) {
      const c = o.chain;
      layout.chains.push({ name: String(c.name), type: c.type as string | undefined, hook: c.hook as string | undefined, prio: c.prio as number | undefined, policy: c.policy as string | undefined });
    }
  }
  return layout;
}

/** The kernel lists dynamic sets without `dynamic` (it is implied by the rules that fill them). */
const sameSet = (k: KernelLayout['sets'][number], x: NftSet) =>
  k.type === x.type &&
  [...k.flags].filter((f) => f !== 'dynamic').sort().join() === x.flags.filter((f) => f !== 'dynamic').sort().join() &&
  (k.size ?? 0) === (x.size ?? 0) &&
  (k.comment ?? '') === (x.comment ?? '');

const sameChain = (k: KernelLayout['chains'][number], c: NftChain) =>
  c.base
    ? k.type === c.base.type && k.hook === c.base.hook && k.prio === (PRIORITY[c.base.priority] ?? Number(c.base.priority)) && k.policy === c.base.policy
    : k.hook === undefined;

/**
 * One atomic batch that turns the table the kernel holds into `target` in place: every chain is
 * flushed and refilled, list sets are flushed and refilled, and a meter set whose definition (type,
 * flags, size, parameters in its comment) is unchanged is left alone, so its per-source state (rate
 * buckets, connection counts) carries over. Objects the target no longer has, or whose definition
 * changed, are deleted (and recreated). Counters restart, as with a full replace.
 */
export function updateScript(kernel: KernelLayout, target: Ruleset): string {
  const T = `inet ${TABLE}`;
  const out = [`add table ${T}`];
  const keptSets = new Set(target.sets.filter((x) => kernel.sets.some((k) => k.name === x.name && sameSet(k, x))).map((x) => x.name));
  const keptChains = new Set(target.chains.filter((c) => kernel.chains.some((k) => k.name === c.name && sameChain(k, c))).map((c) => c.name));
  // Rules go first, so nothing references what is deleted next.
  for (const k of kernel.chains) out.push(`flush chain ${T} ${k.name}`);
  for (const k of kernel.chains) if (!keptChains.has(k.name)) out.push(`delete chain ${T} ${k.name}`);
  for (const k of kernel.sets) if (!keptSets.has(k.name)) out.push(`delete set ${T} ${k.name}`);
  for (const x of target.sets) {
    if (!keptSets.has(x.name)) out.push(`add set ${T} ${x.name} ${setDecl(x, true)}`);
    else if (!x.meter) {
      out.push(`flush set ${T} ${x.name}`);
      if (x.elements.length) out.push(`add element ${T} ${x.name} ${setOf(x.elements)}`);
    }
  }
  for (const c of target.chains) {
    if (keptChains.has(c.name)) continue;
    const head = chainHead(c);
    out.push(`add chain ${T} ${c.name}${head ? ` { ${head} }` : ''}`);
  }
  for (const c of target.chains) for (const rule of c.rules) out.push(`add rule ${T} ${c.name} ${rule}`);
  return `${out.join('\n')}\n`;
}
