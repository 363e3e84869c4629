/* eslint-disable @typescript-eslint/no-explicit-any -- nft -j output is untyped JSON inspected structurally */
// Every protection module against the real kernel: the rule exists in `nft -j` output AND traffic
// from a peer namespace over a veth pair shows its effect. Runs as root (CI); skips loudly otherwise.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE, concurrentConnects, counterOf, createBed, hping, hpingTimed, meterAllows, listen, netnsUnavailable, ping, rulesOf, sh, startCore, tableJson, writeConfig, type Bed, type CoreProc } from './helpers/netns.ts';
import { TABLE } from '../src/ruleset.ts';

const skip = netnsUnavailable();
if (skip) console.warn(`\n!!! firewall netns module tests SKIPPED: ${skip}\n`);

// hping3 source ports, pinned apart and below the kernel's ephemeral range (32768+): a forged RST whose
// tuple matches a connection an earlier test left in conntrack (CLOSE, TIME_WAIT) is tracked, not
// invalid, so overlapping random source ports made the invalid count come up short now and then.
const SPORT = { synFlood: '10000', invalidRst: '20000', rstFlood: '21000' };

const BASE_RULES = {
  tcp: [
    { port: '22', description: 'ssh', ssh: true },
    { port: '8080', description: 'app', ssh: false },
  ],
};

describe.skipIf(!!skip)('protection modules in network namespaces', () => {
  let bed: Bed;
  let core: CoreProc;
  let server: { stop: () => void };
  let foreign = '';

  /** Rewrite the config file, reload it in the running daemon, stage `rules` and apply. */
  async function configure(firewall: Record<string, unknown>, extra: Record<string, unknown> = {}, rules: Record<string, unknown> = {}) {
    const file = writeConfig(bed, { acceptance: { enabled: false }, firewall, ...extra });
    expect(file).toBe(core.configFile);
    const reload = await core.req('RELOAD_OPTIONS');
    expect(reload.error).toBeUndefined();
    for (const [rule_type, list] of Object.entries({ ...BASE_RULES, blacklist: [], whitelist: [], ...rules })) {
      expect((await core.req('SAVE_RULES', { rule_type, rules: list })).success).toBe(true);
    }
    const applied = await core.req('APPLY_RULES');
    expect(applied.error).toBeUndefined();
    expect(applied.success).toBe(true);
  }

  beforeAll(async () => {
    bed = createBed('m');
    // Another party's table (e.g. a container engine's) that the daemon must never touch.
    bed.inHost(['nft', 'add table ip foreign; add chain ip foreign engine { type filter hook forward priority 0; policy accept; }; add rule ip foreign engine counter accept']);
    foreign = bed.inHost(['nft', 'list', 'table', 'ip', 'foreign']);
    const file = writeConfig(bed, { acceptance: { enabled: false } });
    // The veth is this host's outside: the bogon filter applies there only.
    core = await startCore(bed, file, { env: { FIREWALL_EXTERNAL_INTERFACES: 'vh' } });
    server = listen(bed, [22, 8080, 8081]);
  });

  afterAll(async () => {
    server?.stop();
    await core?.stop();
    bed?.destroy();
  });

  it('creates one inet table and leaves other tables alone', async () => {
    await configure({});
    await configure({ drop_fragments: true });
    const all = JSON.parse(bed.inHost(['nft', '-j', 'list', 'tables'])).nftables.filter((o: any) => o.table);
    expect(all.map((o: any) => `${o.table.family} ${o.table.name}`).sort()).toEqual([`inet ${TABLE}`, 'ip foreign']);
    expect(bed.inHost(['nft', 'list', 'table', 'ip', 'foreign'])).toBe(foreign);
    const input = tableJson(bed).find((o) => o.chain?.name === 'input')?.chain;
    expect(input).toMatchObject({ family: 'inet', type: 'filter', hook: 'input', policy: 'drop' });
  });

  it('ICMP flood: per-source meter in nft -j and pings above the limit are dropped (IPv4 and IPv6)', async () => {
    await configure({ icmp_flood: true, icmp_flood_connection_limit: 10 });
    const meter = rulesOf(bed).find((r) => JSON.stringify(r.expr).includes('@icmpflood-v4'));
    expect(JSON.stringify(meter?.expr)).toContain('{"limit":{"rate":10,"burst":10,"per":"second","inv":true}}');
    expect(JSON.stringify(meter?.expr)).toContain('"saddr"');
    expect(rulesOf(bed).some((r) => JSON.stringify(r.expr).includes('@icmpflood-v6'))).toBe(true);

    // ~200 pps against 10/s: at most burst + rate × sending time may pass (bounded by the real send time).
    const flood = ping(bed, bed.hostIp, 150, 5);
    expect(flood.received).toBeGreaterThanOrEqual(10);
    expect(flood.received).toBeLessThanOrEqual(meterAllows(10, 10, flood.sendMs / 1000));
    expect(flood.received).toBeLessThan(150);
    const dropped = counterOf(bed, '@icmpflood-v4');
    expect(dropped).toBeLessThanOrEqual(150 - flood.received);
    expect(dropped).toBeGreaterThanOrEqual(150 - meterAllows(10, 10, flood.sendMs / 1000));
    const flood6 = ping(bed, bed.hostIp6, 150, 5);
    expect(flood6.received).toBeLessThanOrEqual(meterAllows(10, 10, flood6.sendMs / 1000));
    expect(counterOf(bed, '@icmpflood-v6')).toBeGreaterThanOrEqual(150 - meterAllows(10, 10, flood6.sendMs / 1000));
    // Below the limit nothing is lost.
    sh(['sleep', '1.5']);
    expect(ping(bed, bed.hostIp, 5, 200).received).toBe(5);
  });

  it('SSH brute force: the (N+1)th concurrent connection from one source is refused (ct count)', async () => {
    await configure({ ssh_brute_force: true, ssh_brute_force_connection_limit: 3 });
    const rule = rulesOf(bed).find((r) => JSON.stringify(r.expr).includes('@sshconn-v4'));
    expect(JSON.stringify(rule?.expr)).toContain('{"ct count":{"val":3,"inv":true}}');
    expect(concurrentConnects(bed, bed.hostIp, 22, 4)).toBe(3);
    expect(counterOf(bed, '@sshconn-v4')).toBeGreaterThan(0);
    // The limit is per port group: other open ports are unaffected.
    expect(concurrentConnects(bed, bed.hostIp, 8080, 4)).toBe(4);
    expect(concurrentConnects(bed, bed.hostIp6, 22, 4)).toBe(3);
  });

  it('open ports accept, everything else hits the drop policy', async () => {
    await configure({});
    expect(concurrentConnects(bed, bed.hostIp, 8080, 1)).toBe(1);
    expect(concurrentConnects(bed, bed.hostIp, 8081, 1, 1000)).toBe(0);
    expect(concurrentConnects(bed, bed.hostIp6, 8081, 1, 1000)).toBe(0);
  });

  it('port scan: NULL, FIN, XMAS, SYN+FIN probes are dropped silently', async () => {
    await configure({ port_scan: true });
    const before = counterOf(bed, '"fin"');
    // Against a closed port the kernel would answer every probe with an RST; dropped probes get nothing.
    for (const flags of [[], ['-F'], ['-F', '-P', '-U'], ['-S', '-F']]) {
      expect(hping(bed, [...flags, '-p', '8081', '-c', '5', '-i', 'u20000', bed.hostIp])).toBe(0);
    }
    expect(counterOf(bed, '"fin"')).toBeGreaterThan(before);
  });

  it('SYN flood: per-source SYN meter drops SYNs above the limit', async () => {
    await configure({ syn_flood: true, syn_flood_limit: 20 });
    const rule = rulesOf(bed).find((r) => JSON.stringify(r.expr).includes('@synflood-v4'));
    expect(JSON.stringify(rule?.expr)).toContain('{"limit":{"rate":20,"burst":20,"per":"second","inv":true}}');
    const run = hpingTimed(bed, ['-S', '-p', '8080', '-s', SPORT.synFlood, '-i', 'u1000', '-c', '600', bed.hostIp]);
    const dropped = counterOf(bed, '@synflood-v4');
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBeGreaterThanOrEqual(600 - meterAllows(20, 20, run.seconds));
  });

  it('invalid packets: forged out-of-window RSTs hit ct state invalid', async () => {
    await configure({ drop_invalid_packets: true, tcp_rst_flood: false });
    // Resolve the neighbour first, so no forged RST is lost before it reaches the firewall.
    expect(ping(bed, bed.hostIp, 1, 100).received).toBe(1);
    hping(bed, ['-R', '-p', '8080', '-s', SPORT.invalidRst, '-c', '20', '-i', 'u10000', bed.hostIp]);
    expect(counterOf(bed, '"invalid"')).toBeGreaterThanOrEqual(20);
  });

  it('TCP RST flood: the RST meter runs before the invalid drop and limits per source', async () => {
    await configure({ tcp_rst_flood: true, tcp_rst_flood_limit: 10 });
    const json = JSON.stringify(rulesOf(bed).map((r) => r.expr));
    expect(json.indexOf('@tcprst-v4')).toBeLessThan(json.indexOf('"invalid"'));
    const run = hpingTimed(bed, ['-R', '-p', '8080', '-s', SPORT.rstFlood, '-c', '300', '-i', 'u1000', bed.hostIp]);
    const dropped = counterOf(bed, '@tcprst-v4');
    expect(dropped).toBeGreaterThan(0);
    expect(dropped).toBeGreaterThanOrEqual(300 - meterAllows(10, 10, run.seconds));
  });

  it('per-IP connection limit: only connection_limit_max concurrent connections per source', async () => {
    await configure({ connection_limit_per_ip: true, connection_limit_max: 3, ssh_brute_force: false });
    const rule = rulesOf(bed).find((r) => JSON.stringify(r.expr).includes('@connlimit-v4'));
    expect(JSON.stringify(rule?.expr)).toContain('{"ct count":{"val":3,"inv":true}}');
    expect(concurrentConnects(bed, bed.hostIp, 8080, 5)).toBe(3);
  });

  it('fragments: dropped in prerouting below conntrack (priority < -400), IPv4 and IPv6', async () => {
    await configure({ drop_fragments: false });
    expect(ping(bed, bed.hostIp, 3, 100, 3000).received).toBe(3);
    await configure({ drop_fragments: true });
    const chain = tableJson(bed).find((o) => o.chain?.name === 'prerouting')?.chain;
    expect(chain.hook).toBe('prerouting');
    expect(chain.prio).toBeLessThan(-400);
    expect(ping(bed, bed.hostIp, 3, 100, 3000).received).toBe(0);
    expect(ping(bed, bed.hostIp6, 3, 100, 3000).received).toBe(0);
    expect(counterOf(bed, 'frag-off', 'prerouting')).toBeGreaterThan(0);
    expect(counterOf(bed, '"frag"', 'prerouting')).toBeGreaterThan(0);
    // Unfragmented traffic still passes.
    expect(ping(bed, bed.hostIp, 3, 100).received).toBe(3);
  });

  it('bogon filter: RFC 1918 sources on an external interface are dropped; logging uses *_log_limit', async () => {
    await configure({ bogon_filter: true, bogon_filter_log: true, log_blocked_connections: true, log_blocked_connections_limit: 7 });
    expect(ping(bed, bed.hostIp, 3, 100).received).toBe(0);
    expect(counterOf(bed, '192.168.0.0')).toBeGreaterThanOrEqual(3);
    const chains = JSON.stringify(tableJson(bed).filter((o) => o.rule).map((o) => o.rule));
    expect(chains).toContain('{"limit":{"rate":7,"burst":7,"per":"minute"}}');
    expect(chains).toContain('"prefix":"task-firewall bogon: "');
    expect(chains).toContain('"prefix":"task-firewall blocked: "');
  });

  it('blacklist and blocked-connection logging is throttled to *_log_limit entries per minute', async () => {
    await configure({ log_blacklist_connections: true, log_blacklist_connections_limit: 5 }, {}, { blacklist: [bed.peerIp] });
    expect(ping(bed, bed.hostIp, 20, 20).received).toBe(0);
    // The log rule's counter counts packets that passed the limit, i.e. log entries written.
    const logged = counterOf(bed, 'task-firewall blacklist: ', 'blacklist-drop');
    expect(logged).toBeGreaterThanOrEqual(5);
    expect(logged).toBeLessThanOrEqual(6);
    expect(counterOf(bed, '@blacklist-v4')).toBe(20);

    await configure({ log_blocked_connections: true, log_blocked_connections_limit: 3 });
    expect(concurrentConnects(bed, bed.hostIp, 8081, 4, 1500)).toBe(0);
    const blocked = counterOf(bed, 'task-firewall blocked: ');
    expect(blocked).toBeGreaterThanOrEqual(3);
    expect(blocked).toBeLessThanOrEqual(4);
  });

  it('broadcast, multicast and anycast drops', async () => {
    await configure({ drop_broadcast: true, drop_multicast: true, drop_anycast: true });
    const send = (addr: string) =>
      bed.inPeer([
        NODE,
        '-e',
        `const d=require('node:dgram').createSocket('udp4');d.bind(()=>{d.setBroadcast(true);d.setMulticastInterface('10.99.0.2');let n=0;const t=setInterval(()=>{d.send('x',9999,'${addr}');if(++n===5){clearInterval(t);setTimeout(()=>process.exit(0),100)}},20)})`,
      ]);
    send('10.99.0.255');
    send('224.0.0.1');
    expect(counterOf(bed, '"broadcast"')).toBeGreaterThanOrEqual(5);
    expect(counterOf(bed, '"multicast"')).toBeGreaterThanOrEqual(5);
    expect(JSON.stringify(rulesOf(bed))).toContain('"anycast"');
    // IPv6 neighbour discovery (multicast solicitations) still works with the multicast drop on.
    bed.inPeer(['ip', '-6', 'neigh', 'flush', 'all']);
    bed.inHost(['ip', '-6', 'neigh', 'flush', 'all']);
    expect(ping(bed, bed.hostIp6, 3, 100).received).toBe(3);
  });

  it('IPv6 neighbour discovery follows the ICMPv6 135/136 switch', async () => {
    await configure({}, { ipv6: { icmp_allow_neighbor_advertisement: true } });
    bed.inPeer(['ip', '-6', 'neigh', 'flush', 'all']);
    bed.inHost(['ip', '-6', 'neigh', 'flush', 'all']);
    expect(ping(bed, bed.hostIp6, 3, 100).received).toBe(3);
    await configure({}, { ipv6: { icmp_allow_neighbor_advertisement: false, icmp_allow_router_advertisement: false } });
    // (The ICMP flood meter still names them: as exempt from it.)
    const accepts = rulesOf(bed).map((r) => JSON.stringify(r.expr)).filter((e) => e.includes('"accept"'));
    expect(accepts.filter((e) => e.includes('nd-neighbor-solicit') || e.includes('nd-router-advert'))).toEqual([]);
    bed.inPeer(['ip', '-6', 'neigh', 'flush', 'all']);
    bed.inHost(['ip', '-6', 'neigh', 'flush', 'all']);
    expect(ping(bed, bed.hostIp6, 3, 100).received).toBe(0);
  });

  it('IPv6 disabled: no IPv6 rules or sets; IPv6 is left alone (see limits.netns.test.ts)', async () => {
    await configure({}, { ipv6: { enabled: false } });
    const json = JSON.stringify(tableJson(bed));
    expect(json).not.toContain('"ip6"');
    expect(json).not.toContain('icmpv6');
    expect(json).not.toContain('ipv6_addr');
    expect(ping(bed, bed.hostIp6, 2, 100).received).toBe(2);
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(2);
  });

  it('blacklist: an IPv4-mapped IPv6 entry blocks the IPv4 source', async () => {
    await configure({}, {}, { blacklist: [`::ffff:${bed.peerIp}`] });
    expect(((await core.req('GET_RULES')).data as { current: { blacklist: string[] } }).current.blacklist).toEqual([bed.peerIp]);
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(0);
    expect(counterOf(bed, '@blacklist-v4')).toBeGreaterThanOrEqual(2);
  });

  it('blacklist and whitelist: IPs and CIDRs in sets', async () => {
    await configure({}, {}, { blacklist: [bed.peerIp, 'fd99::/64'] });
    const sets = tableJson(bed).filter((o) => o.set).map((o) => o.set);
    expect(sets.find((s) => s.name === 'blacklist-v4').elem).toEqual([bed.peerIp]);
    expect(JSON.stringify(sets.find((s) => s.name === 'blacklist-net-v6').elem)).toContain('fd99::');
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(0);
    expect(ping(bed, bed.hostIp6, 2, 100).received).toBe(0);
    expect(counterOf(bed, '@blacklist-v4')).toBeGreaterThanOrEqual(2);

    await configure({}, {}, { blacklist: ['10.99.0.0/24'] });
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(0);
    expect(ping(bed, bed.hostIp6, 2, 100).received).toBe(2);

    await configure({}, {}, { whitelist: [bed.peerIp] });
    expect(concurrentConnects(bed, bed.hostIp, 8081, 1)).toBe(1); // closed by policy, open by whitelist
  });

  it('container: custom networks are whitelisted; detected bridges too when enabled', async () => {
    bed.inHost(['ip', 'link', 'add', 'br-test', 'type', 'bridge']);
    bed.inHost(['ip', 'addr', 'add', '172.31.5.1/24', 'dev', 'br-test']);
    bed.inHost(['ip', 'link', 'set', 'br-test', 'up']);
    await configure({}, { container: { enabled: true, custom_networks: ['10.99.0.0/24'] } });
    const json = JSON.stringify(rulesOf(bed));
    expect(json).toContain('"prefix":{"addr":"172.31.5.0","len":24}');
    expect(json).toContain('"prefix":{"addr":"10.99.0.0","len":24}');
    expect(concurrentConnects(bed, bed.hostIp, 8081, 1)).toBe(1);
  });
});
