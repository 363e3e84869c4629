// Single-host install: the shipped config is valid and spells out the spec defaults; the systemd
// units point at real CLI entry points with the right users and the shared socket group.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { CLI, NODE } from './helpers/netns.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PREFIX = '/opt/task-service/';
const CONFIG = join(ROOT, 'deploy/firewall/config.json');
const INSTALLED_CONFIG = '/etc/task-firewall/config.json';

type Unit = Record<string, Record<string, string[]>>;

function parseUnit(file: string): Unit {
  const out: Unit = {};
  let section = '';
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const sec = /^\[(.+)\]$/.exec(line);
    if (sec) {
      section = sec[1]!;
      out[section] = {};
      continue;
    }
    const i = line.indexOf('=');
    const key = line.slice(0, i);
    ((out[section]![key] ??= [])).push(line.slice(i + 1));
  }
  return out;
}

const core = parseUnit(join(ROOT, 'deploy/systemd/task-firewall-core.service'));
const web = parseUnit(join(ROOT, 'deploy/systemd/task-firewall-web.service'));

/** ExecStart as argv with the install prefix mapped onto this checkout. */
function argv(unit: Unit, key = 'ExecStart'): string[] {
  const cmd = unit.Service?.[key]?.[0];
  expect(cmd, key).toBeDefined();
  return cmd!.split(/\s+/).map((a) => (a.startsWith(PREFIX) ? join(ROOT, a.slice(PREFIX.length)) : a));
}

describe('deploy/firewall/config.json', () => {
  it('passes task-firewall check-config', () => {
    const r = spawnSync(NODE, [CLI, 'check-config', CONFIG], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('lists every key with exactly the spec default', () => {
    const shipped = JSON.parse(readFileSync(CONFIG, 'utf8'));
    const minimal = parseConfig({ socket_path: shipped.socket_path, data_dir: shipped.data_dir, log_dir: shipped.log_dir });
    expect(minimal.ok && minimal.config).toEqual(shipped);
    expect(shipped.socket_path).toBe('/run/task-firewall/core.sock');
  });
});

describe('deploy/systemd units', () => {
  it.each([
    ['core', core],
    ['web', web],
  ] as const)('%s unit runs the real CLI entry point with the installed config', (cmd, unit) => {
    const [node, cli, sub, flag, config] = argv(unit);
    expect(node).toBe(join(ROOT, 'node_modules/.bin/node'));
    expect(existsSync(node!)).toBe(true);
    expect(cli).toBe(CLI);
    expect(existsSync(cli!)).toBe(true);
    expect([sub, flag, config]).toEqual([cmd, '--config', INSTALLED_CONFIG]);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'services/firewall/package.json'), 'utf8'));
    expect(join(ROOT, 'services/firewall', pkg.bin['task-firewall'])).toBe(CLI);
  });

  it('core validates the config before start; the entry point really exists and answers', () => {
    const pre = argv(core, 'ExecStartPre');
    expect(pre.slice(1, 3)).toEqual([CLI, 'check-config']);
    expect(pre[3]).toBe(INSTALLED_CONFIG);
    const r = spawnSync(pre[0]!, [pre[1]!, 'check-config', CONFIG], { encoding: 'utf8' });
    expect(r.status).toBe(0);
  });

  it('core runs as root; web as an unprivileged user in the socket group', () => {
    expect(core.Service?.User).toEqual(['root']);
    const group = core.Service?.Environment?.find((e) => e.startsWith('FIREWALL_SOCKET_GROUP='))?.split('=')[1];
    expect(group).toBe('task-firewall');
    expect(web.Service?.User?.[0]).not.toBe('root');
    expect(web.Service?.Group).toEqual([group]);
    expect(web.Unit?.Requires).toEqual(['task-firewall-core.service']);
    expect(web.Service?.Environment).toEqual(expect.arrayContaining(['FIREWALL_WEB_PORT=8080']));
    const cfg = JSON.parse(readFileSync(CONFIG, 'utf8'));
    // systemd creates exactly the directories the shipped config points at.
    expect(`/run/${core.Service?.RuntimeDirectory?.[0]}/core.sock`).toBe(cfg.socket_path);
    expect(`/var/lib/${core.Service?.StateDirectory?.[0]}`).toBe(cfg.data_dir);
    expect(`/var/log/${core.Service?.LogsDirectory?.[0]}`).toBe(cfg.log_dir);
  });

  it('the core may write its config (SAVE_OPTIONS) despite ProtectSystem=strict', () => {
    expect(core.Service?.ProtectSystem).toEqual(['strict']);
    expect(core.Service?.ReadWritePaths).toEqual([dirname(INSTALLED_CONFIG)]);
    expect(argv(core).at(-1)).toBe(INSTALLED_CONFIG);
  });

  it('core is Type=notify: systemctl status shows the daemon\'s Status: line (issue 60.4)', () => {
    expect(core.Service?.Type).toEqual(['notify']);
    expect(core.Service?.NotifyAccess).toEqual(['main']);
  });

  const analyze = spawnSync('sh', ['-c', 'command -v systemd-analyze']).status === 0;
  it.skipIf(!analyze)('systemd-analyze verify accepts both units (prefix mapped to this checkout)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fw-units-'));
    const files = ['task-firewall-core.service', 'task-firewall-web.service'].map((name) => {
      const text = readFileSync(join(ROOT, 'deploy/systemd', name), 'utf8').replaceAll(PREFIX, ROOT);
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    });
    const r = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' });
    const problems = r.stderr.split('\n').filter((l) => l.includes('task-firewall') && !/\b(User|Group)\b/.test(l));
    expect(problems).toEqual([]);
  });
});

describe('deploy/firewall/install.sh (the one-line unattended install)', () => {
  const script = join(ROOT, 'deploy/firewall/install.sh');
  const run = (env: Record<string, string>, ...args: string[]) =>
    spawnSync('sh', [script, ...args], { encoding: 'utf8', env: { ...process.env, TASK_FIREWALL_PREFIX: ROOT, ...env } });

  it('refuses to install unattended without FIREWALL_SELF_CONFIRM (or --attended)', () => {
    const dest = mkdtempSync(join(tmpdir(), 'fw-install-'));
    const r = run({ DESTDIR: dest, FIREWALL_SELF_CONFIRM: '' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('set FIREWALL_SELF_CONFIRM=tcp:HOST:PORT');
    expect(existsSync(join(dest, 'etc/task-firewall'))).toBe(false);
  });

  it('writes config, password, FIREWALL_SELF_CONFIRM and the units; a second run keeps them', () => {
    const dest = mkdtempSync(join(tmpdir(), 'fw-install-'));
    const first = run({ DESTDIR: dest, FIREWALL_SELF_CONFIRM: 'tcp:192.0.2.10:22' });
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const etc = join(dest, 'etc/task-firewall');
    expect(readFileSync(join(etc, 'config.json'), 'utf8')).toBe(readFileSync(CONFIG, 'utf8'));
    const password = readFileSync(join(etc, 'web-password'), 'utf8');
    expect(password.trim().length).toBeGreaterThanOrEqual(20);
    expect(readFileSync(join(etc, 'core.env'), 'utf8')).toBe('FIREWALL_SELF_CONFIRM=tcp:192.0.2.10:22\n');
    for (const unit of ['task-firewall-core.service', 'task-firewall-web.service']) {
      expect(readFileSync(join(dest, 'etc/systemd/system', unit), 'utf8')).toBe(readFileSync(join(ROOT, 'deploy/systemd', unit), 'utf8'));
    }
    expect(run({ DESTDIR: dest, FIREWALL_SELF_CONFIRM: 'tcp:192.0.2.11:22' }).status).toBe(0);
    expect(readFileSync(join(etc, 'web-password'), 'utf8')).toBe(password);
    expect(readFileSync(join(etc, 'core.env'), 'utf8')).toBe('FIREWALL_SELF_CONFIRM=tcp:192.0.2.11:22\n');
  });
});
