// Ruleset generation (pure): which rules each option produces, their values and their order.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig, type FirewallConfig } from '../src/config.ts';
import { networkOf } from '../src/net.ts';
import { emptyRules, type RuleSet } from '../src/rules.ts';
import { buildModel, buildRuleset, kernelLayoutOf, parseFull, renderFull, splitAddresses, sshPortsOf, TABLE, updateScript, type Bridge } from '../src/ruleset.ts';
import { NODE, netnsUnavailable } from './helpers/netns.ts';

const REQUIRED = { socket_path: '/s', data_dir: '/d', log_dir: '/l' };

function config(raw: Record<string, unknown> = {}): FirewallConfig {
  const r = parseConfig({ ...REQUIRED, ...raw });
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.config;
}

function build(fw: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, rules: Partial<RuleSet> = {}, bridges: Bridge[] = [], external = ['eth0']): string {
  return buildRuleset({ config: config({ firewall: fw, ...extra }), rules: { ...emptyRules(), ...rules }, bridges, external });
}

const ALL_OFF = Object.fromEntries(
  ['ssh_brute_force', 'icmp_flood', 'syn_flood', 'port_scan', 'drop_invalid_packets'].map((k) => [k, false]),
);
const ALL_ON = Object.fromEntries(
  [
    'ssh_brute_force', 'icmp_flood', 'syn_flood', 'port_scan', 'drop_invalid_packets', 'drop_fragments', 'bogon_filter', 'connection_limit_per_ip',
    'tcp_rst_flood', 'drop_broadcast', 'drop_multicast', 'drop_anycast', 'log_blocked_connections', 'log_blacklist_connections',
  ].map((k) => [k, true]),
);
const ALL_LOGS = Object.fromEntries(
  ['ssh_brute_force_log', 'icmp_flood_log', 'syn_flood_log', 'port_scan_log', 'drop_invalid_packets_log', 'drop_fragments_log', 'bogon_filter_log', 'tcp_rst_flood_log'].map(
    (k) => [k, true],
  ),
);

/** A marker substring per module, present exactly when the module is on. */
const MARKERS: Record<string, string> = {
  ssh_brute_force: '@sshconn-v4',
  icmp_flood: '@icmpflood-v4',
  syn_flood: '@synflood-v4',
  port_scan: 'tcp flags & (fin|syn|rst|psh|ack|urg) == 0x0',
  drop_invalid_packets: 'ct state invalid',
  drop_fragments: 'ip frag-off & 0x3fff != 0',
  bogon_filter: '192.168.0.0/16',
  connection_limit_per_ip: '@connlimit-v4',
  tcp_rst_flood: '@tcprst-v4',
  drop_broadcast: 'meta pkttype broadcast',
  drop_multicast: 'meta pkttype multicast',
  drop_anycast: 'fib daddr type anycast',
  log_blocked_connections: 'task-firewall blocked: ',
  log_blacklist_connections: 'task-firewall blacklist: ',
};

describe('buildRuleset: modules', () => {
  it('is one atomic replace of our inet table only', () => {
    const s = build();
    expect(s.startsWith(`add table inet ${TABLE}\ndelete table inet ${TABLE}\ntable inet ${TABLE} {`)).toBe(true);
    expect(s.match(/^table /gm)).toHaveLength(1);
    expect(s).toContain('type filter hook input priority filter; policy drop;');
    expect(s).not.toMatch(/hook forward/);
  });

  it.each(Object.entries(MARKERS))('%s adds its rule only when enabled', (key, marker) => {
    expect(build({ ...ALL_OFF, [key]: true })).toContain(marker);
    expect(build({ ...ALL_OFF, [key]: false })).not.toContain(marker);
  });

  it('spec defaults enable ssh, icmp, syn, port scan and invalid; the rest are off', () => {
    const s = build();
    for (const k of ['ssh_brute_force', 'icmp_flood', 'syn_flood', 'port_scan', 'drop_invalid_packets']) expect(s).toContain(MARKERS[k]);
    for (const k of ['drop_fragments', 'bogon_filter', 'connection_limit_per_ip', 'tcp_rst_flood', 'drop_broadcast', 'drop_multicast', 'drop_anycast', 'log_blocked_connections', 'log_blacklist_connections']) {
      expect(s).not.toContain(MARKERS[k]);
    }
  });

  it('carries every limit into its rule, per source, both families', () => {
    const s = build({
      ...ALL_ON,
      ssh_brute_force_connection_limit: 7,
      icmp_flood_connection_limit: 13,
      syn_flood_limit: 21,
      connection_limit_max: 99,
      tcp_rst_flood_limit: 33,
      log_blocked_connections_limit: 4,
      log_blacklist_connections_limit: 6,
    });
    expect(s).toContain('add @sshconn-v4 { ip saddr ct count over 7 }');
    expect(s).toContain('add @sshconn-v6 { ip6 saddr ct count over 7 }');
    expect(s).toContain('icmp type != destination-unreachable update @icmpflood-v4 { ip saddr timeout 1m limit rate over 13/second burst 13 packets }');
    expect(s).toContain('icmp type destination-unreachable icmp code != frag-needed update @icmpflood-v4 { ip saddr timeout 1m limit rate over 13/second burst 13 packets }');
    expect(s).toContain(
      'icmpv6 type != { packet-too-big, nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } update @icmpflood-v6 { ip6 saddr timeout 1m limit rate over 13/second burst 13 packets }',
    );
    // The burst never exceeds the limit (issue 60.2).
    expect(s).toContain('update @synflood-v4 { ip saddr timeout 1m limit rate over 21/second burst 21 packets }');
    expect(s).toContain('update @synflood-v6 { ip6 saddr timeout 1m limit rate over 21/second burst 21 packets }');
    expect(s).not.toMatch(/limit rate over (\d+)\/second burst (?!\1 )\d+ packets/);
    expect(s).toContain('ct state new add @connlimit-v4 { ip saddr ct count over 99 }');
    expect(s).toContain('ct state new add @connlimit-v6 { ip6 saddr ct count over 99 }');
    expect(s).toContain('update @tcprst-v4 { ip saddr timeout 1m limit rate over 33/second burst 33 packets }');
    expect(s).toContain('limit rate 4/minute burst 4 packets counter log prefix "task-firewall blocked: "');
    expect(s).toContain('limit rate 6/minute burst 6 packets counter log prefix "task-firewall blacklist: "');
  });

  it('every *_log option logs through a rate-limited <module>-drop chain with its own limit', () => {
    const s = build({ ...ALL_ON, ...ALL_LOGS, ssh_brute_force_log_limit: 3, icmp_flood_log_limit: 5, log_blocked_connections_limit: 9 });
    for (const [module, limit] of [['sshbrute', 3], ['icmpflood', 5], ['synflood', 9], ['portscan', 9], ['invalid', 9], ['fragments', 9], ['bogon', 9], ['tcprst', 9]] as const) {
      expect(s).toContain(`chain ${module}-drop {\n\t\tlimit rate ${limit}/minute burst ${limit} packets counter log prefix "task-firewall ${module}: "\n\t\tdrop\n\t}`);
      expect(s).toContain(`counter jump ${module}-drop`);
    }
    expect(build({ ...ALL_ON })).not.toContain('log prefix "task-firewall sshbrute');
  });

  it('orders rules so meters see every packet and nothing useful is shadowed', () => {
    const s = build({ ...ALL_ON });
    const at = (x: string) => {
      const i = s.indexOf(x);
      expect(i, x).toBeGreaterThanOrEqual(0);
      return i;
    };
    const established = at('ct state established,related accept');
    for (const m of ['@sshconn-v4', '@icmpflood-v4', '@synflood-v4', '@connlimit-v4', '@tcprst-v4', 'ct state invalid', MARKERS.port_scan!]) expect(at(m)).toBeLessThan(established);
    expect(at('@tcprst-v4')).toBeLessThan(at('ct state invalid'));
    expect(at('meta pkttype broadcast')).toBeLessThan(at('icmp type { echo-request'));
    expect(at('nd-neighbor-solicit')).toBeLessThan(at('meta pkttype multicast'));
    expect(at('@blacklist-v4')).toBeLessThan(at('@whitelist-v4'));
    expect(at('@whitelist-v4')).toBeLessThan(at('@icmpflood-v4'));
    expect(at('iif "lo" accept')).toBeLessThan(at('@blacklist-v4'));
    expect(s).toContain('type filter hook prerouting priority -450; policy accept;');
  });

  it('bogon filter: only on external interfaces (never lo or a detected bridge), after established', () => {
    const s = build({ bogon_filter: true }, { container: { enabled: true } }, {}, [{ name: 'docker0', networks: ['172.17.0.0/16'] }], ['eth0', 'wan*', 'lo', 'docker0']);
    const bogon = s.split('\n').filter((l) => l.includes('192.168.0.0/16'));
    expect(bogon.map((l) => l.trim())).toEqual([
      'iifname "eth0" ip saddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 } counter drop',
      'iifname "wan*" ip saddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 } counter drop',
    ]);
    expect(s.indexOf('ct state established,related accept')).toBeLessThan(s.indexOf('iifname "eth0"'));
    // No interface named external: no bogon rule at all (a LAN with RFC 1918 addresses keeps working).
    expect(build({ bogon_filter: true }, {}, {}, [], [])).not.toContain('192.168.0.0/16');
  });

  it('IPv4-mapped IPv6 list entries become IPv4 (the kernel matches them with ip saddr)', () => {
    const s = build({}, {}, { blacklist: ['::ffff:10.250.0.2', '::FFFF:10.1.0.0/112'], whitelist: ['::ffff:c000:0201'] });
    expect(s).toContain('set blacklist-v4 { type ipv4_addr; elements = { 10.250.0.2 }; }');
    expect(s).toContain('set blacklist-net-v4 { type ipv4_addr; flags interval; auto-merge; elements = { 10.1.0.0/16 }; }');
    expect(s).toContain('set whitelist-v4 { type ipv4_addr; elements = { 192.0.2.1 }; }');
    expect(s).not.toContain('ffff');
  });
});

describe('buildRuleset: IPv6 switches', () => {
  it('ipv6.enabled=false: no IPv6 rule or set, IPv6 left alone (accepted by our table before any filter)', () => {
    const s = build({ ...ALL_ON }, { ipv6: { enabled: false } }, { forwarding: [{ protocol: 'tcp', source_port: 80, dest_port: 8080 }] });
    expect(s).not.toMatch(/ip6 |icmpv6|ipv6_addr|exthdr/);
    expect(s).not.toContain('meta nfproto ipv6 counter drop');
    expect(s.indexOf('meta nfproto ipv6 accept')).toBeLessThan(s.indexOf('@blacklist-v4'));
    expect(s).toContain('meta nfproto ipv4 tcp dport 80 redirect to :8080');
  });

  it('router advertisement (134) and neighbour solicitation/advertisement (135/136) follow their switches', () => {
    expect(build()).toContain('icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept');
    expect(build()).toContain('icmpv6 type nd-router-advert accept');
    const off = build({}, { ipv6: { icmp_allow_router_advertisement: false, icmp_allow_neighbor_advertisement: false } });
    expect(off).not.toMatch(/nd-neighbor-advert \} accept|nd-router-advert accept/);
  });
});

describe('buildRuleset: lists, ports, containers', () => {
  it('puts single IPs in hash sets and networks in interval sets, per family', () => {
    const s = build({}, {}, { blacklist: ['1.2.3.4', '1.2.3.4', '10.0.0.0/8', '2001:DB8::1', '2001:db8:1::/48'], whitelist: ['9.9.9.9', 'fd00::/8'] });
    expect(s).toContain('set blacklist-v4 { type ipv4_addr; elements = { 1.2.3.4 }; }');
    expect(s).toContain('set blacklist-net-v4 { type ipv4_addr; flags interval; auto-merge; elements = { 10.0.0.0/8 }; }');
    expect(s).toContain('set blacklist-v6 { type ipv6_addr; elements = { 2001:db8::1 }; }');
    expect(s).toContain('set blacklist-net-v6 { type ipv6_addr; flags interval; auto-merge; elements = { 2001:db8:1::/48 }; }');
    expect(s).toContain('set whitelist-v4 { type ipv4_addr; elements = { 9.9.9.9 }; }');
    expect(s).toContain('set whitelist-net-v6 { type ipv6_addr; flags interval; auto-merge; elements = { fd00::/8 }; }');
    expect(s).toContain('ip saddr @blacklist-v4 counter drop');
  });

  it('splitAddresses normalises host bits and deduplicates', () => {
    expect(splitAddresses(['10.1.2.3/8', '10.0.0.0/8', '::1', '::1', 'fd00::5/8'])).toEqual({ v4: [], v4net: ['10.0.0.0/8'], v6: ['::1'], v6net: ['fd00::/8'] });
    expect(networkOf('172.17.0.1/16')).toBe('172.17.0.0/16');
    expect(networkOf('2001:db8:aa:bb::1/48')).toBe('2001:db8:aa::/48');
    expect(networkOf('0.0.0.0/0')).toBe('0.0.0.0/0');
  });

  it('opens TCP/UDP ports and ranges; ssh flag adds ports to the SSH limit', () => {
    const s = build({}, {}, { tcp: [{ port: '22', description: '', ssh: true }, { port: '2222', description: '', ssh: true }, { port: '8000:9000', description: '', ssh: false }], udp: [{ port: '53', description: '', ssh: false }] });
    expect(s).toContain('tcp dport { 22, 2222, 8000-9000 } accept');
    expect(s).toContain('udp dport { 53 } accept');
    expect(s).toContain('tcp dport { 22, 2222 } ct state new add @sshconn-v4');
    expect(sshPortsOf({ ...emptyRules() })).toEqual(['22']);
  });

  it('forwarding redirects in a nat prerouting chain and opens the destination port', () => {
    const s = build({}, {}, { forwarding: [{ protocol: 'tcp', source_port: 80, dest_port: 8080 }, { protocol: 'udp', source_port: 53, dest_port: 5353 }] });
    expect(s).toContain('type nat hook prerouting priority dstnat; policy accept;');
    expect(s).toContain('tcp dport 80 redirect to :8080');
    expect(s).toContain('udp dport 53 redirect to :5353');
    expect(s).toContain('tcp dport { 8080 } accept');
    expect(s).toContain('udp dport { 5353 } accept');
  });

  it('whitelists custom networks always, detected bridges only when enabled and allowed', () => {
    const br = [{ name: 'docker0', networks: ['172.17.0.0/16', 'fd42::/64'] }];
    expect(build({}, { container: { custom_networks: ['10.5.0.0/16'] } }, {}, br)).toContain('ip saddr { 10.5.0.0/16 } accept');
    expect(build({}, { container: { enabled: false } }, {}, br)).not.toContain('172.17.0.0/16');
    const on = build({}, { container: { enabled: true } }, {}, br);
    expect(on).toContain('ip saddr { 172.17.0.0/16 } accept');
    expect(on).toContain('ip6 saddr { fd42::/64 } accept');
    expect(build({}, { container: { enabled: true, allow_bridge_networks: false } }, {}, br)).not.toContain('172.17.0.0/16 } accept');
  });

  it('appends custom rules to the input chain before the final log', () => {
    const s = build({ log_blocked_connections: true }, {}, { custom: ['tcp dport 9999 accept'] });
    expect(s.indexOf('tcp dport 9999 accept')).toBeLessThan(s.indexOf('task-firewall blocked'));
  });
});

describe('in-place updates (issue 60.3)', () => {
  const input = (fw: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, rules: Partial<RuleSet> = {}) => ({
    config: config({ firewall: fw, ...extra }),
    rules: { ...emptyRules(), ...rules },
    bridges: [] as Bridge[],
    external: ['eth0'],
  });

  it('parseFull is the inverse of renderFull', () => {
    for (const i of [input(), input({ ...ALL_ON, ...ALL_LOGS }, { container: { custom_networks: ['10.0.0.0/8'] } }, { blacklist: ['1.2.3.4', '5.0.0.0/8', '2001:db8::/32'], forwarding: [{ protocol: 'tcp', source_port: 80, dest_port: 8080 }], custom: ['tcp dport 9999 accept'] }), input({}, { ipv6: { enabled: false } })]) {
      const model = buildModel(i);
      expect(parseFull(renderFull(model))).toEqual(JSON.parse(JSON.stringify(model)));
    }
  });

  it('keeps meter sets whose definition is unchanged, refills list sets, recreates changed meters, deletes what is gone', () => {
    const before = buildModel(input({ connection_limit_per_ip: true, drop_fragments: true }, {}, { blacklist: ['1.2.3.4'] }));
    // What the kernel lists for `before` (flags without `dynamic`, as the kernel reports them).
    const kernel = kernelLayoutOf({
      nftables: [
        ...before.sets.map((x) => ({ set: { name: x.name, type: x.type, flags: x.flags.filter((f) => f !== 'dynamic'), size: x.size, comment: x.comment } })),
        ...before.chains.map((c) => ({ chain: { name: c.name, ...(c.base ? { type: c.base.type, hook: c.base.hook, prio: c.base.priority === 'filter' ? 0 : Number(c.base.priority), policy: c.base.policy } : {}) } })),
      ],
    });
    const after = buildModel(input({ connection_limit_per_ip: true, icmp_flood_connection_limit: 50, drop_broadcast: true }, {}, { blacklist: ['5.6.7.8'] }));
    const u = updateScript(kernel, after);
    expect(u).not.toContain('delete table');
    expect(u).not.toMatch(/delete set inet task_firewall (sshconn|synflood|connlimit)-v4/);
    expect(u).toContain('delete set inet task_firewall icmpflood-v4'); // its limit changed: old elements carry the old rate
    expect(u).toContain('add set inet task_firewall icmpflood-v4 { type ipv4_addr; flags dynamic,timeout; size 65535; comment "meter: limit rate over 50/second burst 50 packets"; }');
    expect(u).toContain('flush set inet task_firewall blacklist-v4\nadd element inet task_firewall blacklist-v4 { 5.6.7.8 }');
    expect(u).toContain('delete chain inet task_firewall prerouting');
    expect(u).toContain('add rule inet task_firewall input meta pkttype broadcast counter drop');
    expect(u.indexOf('flush chain inet task_firewall input')).toBeLessThan(u.indexOf('delete set'));
  });
});

const skip = netnsUnavailable();
describe.skipIf(!!skip)('in-place updates against the kernel (unshare -n)', () => {
  const steps = fileURLToPath(new URL('./helpers/apply-steps.ts', import.meta.url));
  const run = (list: unknown[]) => {
    const r = spawnSync('unshare', ['-n', NODE, steps], { input: JSON.stringify(list), encoding: 'utf8' });
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as { modes: string[]; listing: string };
  };
  const sorted = (listing: string) => listing.replace(/counter packets \d+ bytes \d+/g, 'counter').split('\n\n').sort().join('\n\n');
  const A = build({ connection_limit_per_ip: true, drop_fragments: true }, {}, { blacklist: ['1.2.3.4'], forwarding: [{ protocol: 'tcp', source_port: 80, dest_port: 8080 }] });
  const B = build({ connection_limit_per_ip: true, drop_broadcast: true, icmp_flood_log: true }, { container: { custom_networks: ['10.9.0.0/16'] } }, { blacklist: ['5.6.7.8', '9.0.0.0/8'] });
  const seed = `add element inet ${TABLE} icmpflood-v4 { 192.0.2.9 timeout 1m }`;

  it('a meter keeps its elements across an in-place update; the result lists as the target does', () => {
    const r = run([{ script: A }, { nft: seed }, { script: B }]);
    expect(r.modes).toEqual(['replaced', 'in-place']);
    expect(r.listing).toMatch(/set icmpflood-v4 \{[^}]*elements = \{ 192\.0\.2\.9 /);
    const fresh = run([{ script: B }]);
    expect(sorted(r.listing.replace(/\n\t\telements = \{ 192\.0\.2\.9 [^}]*\}/, ''))).toBe(sorted(fresh.listing));
  });

  it('a changed limit recreates that meter (its elements carry the old rate)', () => {
    const r = run([{ script: A }, { nft: seed }, { script: build({ icmp_flood_connection_limit: 77 }) }]);
    expect(r.modes).toEqual(['replaced', 'in-place']);
    expect(r.listing).toContain('comment "meter: limit rate over 77/second burst 77 packets"');
    expect(r.listing).not.toContain('192.0.2.9');
  });
});

describe.skipIf(!!skip)('generated scripts are accepted by the kernel (unshare -n)', () => {
  const script = fileURLToPath(new URL('./helpers/apply-stdin.ts', import.meta.url));
  const cases: [string, string][] = [
    ['defaults', build()],
    ['everything off', build(ALL_OFF)],
    ['everything on with logs', build({ ...ALL_ON, ...ALL_LOGS }, { container: { enabled: true, custom_networks: ['10.0.0.0/8', 'fd00::/8'] } }, { tcp: [{ port: '22', description: '', ssh: true }, { port: '8000:9000', description: '', ssh: false }], blacklist: ['1.2.3.4', '5.0.0.0/8', '2001:db8::/32'], whitelist: ['9.9.9.9'], forwarding: [{ protocol: 'tcp', source_port: 80, dest_port: 8080 }] }, [{ name: 'docker0', networks: ['172.17.0.0/16'] }])],
    ['IPv6 off', build({ ...ALL_ON }, { ipv6: { enabled: false } })],
  ];
  it.each(cases)('%s', (_name, s) => {
    const r = spawnSync('unshare', ['-n', NODE, script], { input: s, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`table inet ${TABLE}`);
  });
});
