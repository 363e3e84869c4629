// Config validation: strict objects, spec defaults and bounds, JSON paths in every problem.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig, parseConfigText } from '../src/config.ts';
import { CLI, NODE } from './helpers/netns.ts';

const REQUIRED = { socket_path: '/run/task-firewall/core.sock', data_dir: '/var/lib/task-firewall', log_dir: '/var/log/task-firewall' };

/** The spec's tables, verbatim: key -> default. */
const SPEC_DEFAULTS = {
  acceptance: { enabled: true, duration: 120 },
  ipv6: { enabled: true, icmp_allow_router_advertisement: true, icmp_allow_neighbor_advertisement: true },
  container: { enabled: false, allow_bridge_networks: true, custom_networks: [] },
  firewall: {
    ssh_brute_force: true,
    ssh_brute_force_log: false,
    ssh_brute_force_connection_limit: 5,
    ssh_brute_force_log_limit: 60,
    icmp_flood: true,
    icmp_flood_log: false,
    icmp_flood_connection_limit: 10,
    icmp_flood_log_limit: 60,
    syn_flood: true,
    syn_flood_log: false,
    syn_flood_limit: 100,
    port_scan: true,
    port_scan_log: false,
    drop_invalid_packets: true,
    drop_invalid_packets_log: false,
    drop_fragments: false,
    drop_fragments_log: false,
    bogon_filter: false,
    bogon_filter_log: false,
    connection_limit_per_ip: false,
    connection_limit_max: 100,
    tcp_rst_flood: false,
    tcp_rst_flood_log: false,
    tcp_rst_flood_limit: 100,
    drop_broadcast: false,
    drop_multicast: false,
    drop_anycast: false,
    log_blocked_connections: false,
    log_blocked_connections_limit: 60,
    log_blacklist_connections: false,
    log_blacklist_connections_limit: 60,
  },
};

/** [section, key, min, max | undefined] for every bounded integer in the spec. */
const BOUNDS: [string, string, number, number | undefined][] = [
  ['acceptance', 'duration', 10, 3600],
  ['firewall', 'ssh_brute_force_connection_limit', 1, 100],
  ['firewall', 'ssh_brute_force_log_limit', 1, undefined],
  ['firewall', 'icmp_flood_connection_limit', 1, 1000],
  ['firewall', 'icmp_flood_log_limit', 1, undefined],
  ['firewall', 'syn_flood_limit', 1, 10000],
  ['firewall', 'connection_limit_max', 1, 100000],
  ['firewall', 'tcp_rst_flood_limit', 1, 10000],
  ['firewall', 'log_blocked_connections_limit', 1, undefined],
  ['firewall', 'log_blacklist_connections_limit', 1, undefined],
];

function problems(raw: unknown): string[] {
  const r = parseConfig(raw);
  return r.ok ? [] : r.problems.map((p) => p.path);
}

describe('config defaults', () => {
  it('applies every spec default when optional sections are absent', () => {
    const r = parseConfig(REQUIRED);
    expect(r.ok && r.config).toEqual({ ...REQUIRED, ...SPEC_DEFAULTS });
  });

  it('applies every default inside an empty or partial section', () => {
    const r = parseConfig({ ...REQUIRED, acceptance: {}, ipv6: {}, container: {}, firewall: { syn_flood: false } });
    expect(r.ok && r.config).toEqual({ ...REQUIRED, ...SPEC_DEFAULTS, firewall: { ...SPEC_DEFAULTS.firewall, syn_flood: false } });
  });

  it('keeps explicit values', () => {
    const r = parseConfig({ ...REQUIRED, acceptance: { enabled: false, duration: 3600 }, container: { custom_networks: ['10.0.0.0/8', 'fd00::/8'] } });
    expect(r.ok && r.config.acceptance).toEqual({ enabled: false, duration: 3600 });
    expect(r.ok && r.config.container.custom_networks).toEqual(['10.0.0.0/8', 'fd00::/8']);
  });
});

describe('config rejections carry the JSON path', () => {
  it.each(['socket_path', 'data_dir', 'log_dir'])('requires %s', (key) => {
    const raw: Record<string, unknown> = { ...REQUIRED };
    delete raw[key];
    expect(problems(raw)).toEqual([key]);
  });

  it('rejects unknown keys at every level', () => {
    expect(problems({ ...REQUIRED, extra: 1 })).toEqual(['extra']);
    for (const section of ['acceptance', 'ipv6', 'container', 'firewall']) {
      expect(problems({ ...REQUIRED, [section]: { hidden: true } })).toEqual([`${section}.hidden`]);
    }
  });

  it('rejects wrong types for every key', () => {
    expect(problems({ ...REQUIRED, socket_path: 5 })).toEqual(['socket_path']);
    for (const [section, keys] of Object.entries(SPEC_DEFAULTS)) {
      for (const [key, def] of Object.entries(keys)) {
        const wrong = typeof def === 'boolean' ? 'true' : typeof def === 'number' ? '12' : 'not-an-array';
        expect(problems({ ...REQUIRED, [section]: { [key]: wrong } })).toEqual([`${section}.${key}`]);
      }
    }
    expect(problems({ ...REQUIRED, acceptance: { duration: 12.5 } })).toEqual(['acceptance.duration']);
    expect(problems({ ...REQUIRED, firewall: [] })).toEqual(['firewall']);
  });

  it.each(BOUNDS)('%s.%s is bounded %d..%s', (section, key, min, max) => {
    expect(problems({ ...REQUIRED, [section]: { [key]: min } })).toEqual([]);
    expect(problems({ ...REQUIRED, [section]: { [key]: min - 1 } })).toEqual([`${section}.${key}`]);
    if (max !== undefined) {
      expect(problems({ ...REQUIRED, [section]: { [key]: max } })).toEqual([]);
      expect(problems({ ...REQUIRED, [section]: { [key]: max + 1 } })).toEqual([`${section}.${key}`]);
    } else {
      expect(problems({ ...REQUIRED, [section]: { [key]: 1_000_000 } })).toEqual([]);
    }
  });

  it('custom_networks items must be CIDR per the spec pattern', () => {
    const ok = ['10.0.0.0/8', '192.168.1.0/24', '1.2.3.4/32', 'fd00::/8', '2001:db8::/32', '::/0', '2001:db8::1/128'];
    expect(problems({ ...REQUIRED, container: { custom_networks: ok } })).toEqual([]);
    const bad = ['10.0.0.0', '10.0.0.0/123', 'fd00::', 'fd00::/1234', 'host/8', '10.0.0.0/33', '300.1.1.1/8', 'fd00::/129', ':::::/8', 'g::/8'];
    expect(problems({ ...REQUIRED, container: { custom_networks: bad } })).toEqual(bad.map((_, i) => `container.custom_networks[${i}]`));
  });

  it('reports every problem at once, and invalid JSON as a root problem', () => {
    expect(problems({ data_dir: 1, firewall: { icmp_flood: 'x', syn_flood_limit: 0, nope: 1 } }).sort()).toEqual(
      ['data_dir', 'firewall.icmp_flood', 'firewall.nope', 'firewall.syn_flood_limit', 'log_dir', 'socket_path'].sort(),
    );
    const r = parseConfigText('{"socket_path":');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems[0]?.path).toBe('(root)');
    expect(problems([])).toEqual(['(root)']);
  });
});

describe('task-firewall check-config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fw-check-'));
  const run = (file: string) => spawnSync(NODE, [CLI, 'check-config', file], { encoding: 'utf8' });

  it('exits 0 with a short summary for a valid file', () => {
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify(REQUIRED));
    const r = run(file);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('valid');
  });

  it('prints every problem with its JSON path and exits non-zero', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ ...REQUIRED, hidden: 1, acceptance: { duration: 5 }, ipv6: { enabled: 'yes' }, container: { custom_networks: ['nope'] } }));
    const r = run(file);
    expect(r.status).not.toBe(0);
    for (const path of ['hidden', 'acceptance.duration', 'ipv6.enabled', 'container.custom_networks[0]']) {
      // Once, on stderr (issue 23.10: the report was printed twice).
      expect(r.stderr.split(`${path}:`)).toHaveLength(2);
      expect(r.stdout).toBe('');
    }
  });

  it('fails on a missing file and on usage errors', () => {
    expect(run(join(dir, 'missing.json')).status).not.toBe(0);
    expect(spawnSync(NODE, [CLI, 'check-config'], { encoding: 'utf8' }).status).toBe(2);
    expect(spawnSync(NODE, [CLI, 'bogus'], { encoding: 'utf8' }).status).toBe(2);
  });
});
