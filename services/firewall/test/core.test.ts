// FirewallCore's state machine and files without root: the apply function here only records the
// scripts it is given (the kernel side of the same flows is tested in acceptance.netns.test.ts).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { ERR_APPLY_IN_PROGRESS, ERR_NOTHING_PENDING, FirewallCore, type CoreDeps } from '../src/core.ts';
import { removeTableScript } from '../src/ruleset.ts';
import { dispatch } from '../src/socket.ts';
import { until } from '../../../tools/testenv/wait.ts';

function makeCore(raw: Record<string, unknown> = {}, dir = mkdtempSync(join(tmpdir(), 'fw-core-')), extra: Partial<CoreDeps> = {}) {
  const configFile = join(dir, 'config.json');
  const text = JSON.stringify({ socket_path: join(dir, 's.sock'), data_dir: join(dir, 'data'), log_dir: join(dir, 'log'), acceptance: { duration: 10 }, ...raw });
  writeFileSync(configFile, text);
  const parsed = parseConfig(JSON.parse(text));
  if (!parsed.ok) throw new Error('bad test config');
  const applied: string[] = [];
  const fail = { next: false };
  const core = new FirewallCore({
    config: parsed.config,
    configFile,
    logger: pino({ level: 'silent' }),
    bridges: () => [],
    external: () => [],
    check: (s) => {
      if (s.includes('nonsense')) throw Object.assign(new Error('nftables refused the batch'), { nftMessage: 'Error: syntax error, unexpected string' });
    },
    ...extra,
    apply: (s) => {
      if (fail.next) {
        fail.next = false;
        throw new Error('nftables refused the batch: test');
      }
      applied.push(s);
    },
  });
  return { core, applied, fail, dir, configFile };
}

const actions = (core: FirewallCore) => core.audit.tail().map((e) => e.action);

/** Start and confirm the first start's window (most cases begin from confirmed rules). */
function startConfirmed(core: FirewallCore): void {
  core.start();
  core.accept('setup');
}

afterEach(() => {
  vi.useRealTimers();
});

describe('FirewallCore (recording apply function)', () => {
  it('first start: SSH (22 + the ports sshd listens on) and the web port open, under the confirmation window', () => {
    vi.useFakeTimers();
    const { core, applied, dir } = makeCore({}, undefined, { firstStart: () => ({ sshPorts: [2222], webPort: 8443 }) });
    core.start();
    expect(applied).toHaveLength(1);
    expect(applied[0]).toContain('tcp dport { 22, 2222, 8443 } accept');
    expect(applied[0]).toContain('tcp dport { 22, 2222 } ct state new add @sshconn-v4');
    const stored = JSON.parse(readFileSync(join(dir, 'data', 'rules.json'), 'utf8'));
    expect(stored).toMatchObject({ current: { tcp: [{ port: '22', ssh: true }, { port: '2222', ssh: true }, { port: '8443', ssh: false }] }, acceptance: 'pending' });
    expect(JSON.parse(readFileSync(join(dir, 'data', 'version.json'), 'utf8'))).toHaveProperty('checked_at');
    expect(core.status()).toMatchObject({ acceptance: 'pending', has_pending: true });
    // Unconfirmed: the host goes back to having no table of ours.
    vi.advanceTimersByTime(10_000);
    expect(applied.at(-1)).toBe(removeTableScript());
    expect(core.status()).toMatchObject({ active: false, acceptance: 'rolled_back' });
    expect(actions(core)).toEqual(['apply_started', 'apply_rolledback']);
  });

  it('a confirmed start is enforced without a window at the next start', () => {
    const first = makeCore();
    startConfirmed(first.core);
    first.core.stop();
    const second = makeCore({}, first.dir);
    second.core.start();
    expect(second.applied).toEqual([first.applied[0]]);
    expect(second.core.status()).toMatchObject({ has_pending: false, active: true });
    expect(actions(second.core).at(-1)).toBe('boot_enforced');
    second.core.stop();
  });

  it('apply -> pending -> timeout rolls back to the previous rules and resets staged', () => {
    vi.useFakeTimers();
    const { core, applied } = makeCore();
    startConfirmed(core);
    core.saveRules('blacklist', ['192.0.2.1'], 'alice');
    expect(core.apply('alice')).toMatchObject({ acceptance: 'pending', has_pending: true, pending: { remaining_seconds: 10 } });
    expect(() => core.apply('alice')).toThrow(ERR_APPLY_IN_PROGRESS);
    vi.advanceTimersByTime(9_999);
    expect(core.status().acceptance).toBe('pending');
    vi.advanceTimersByTime(1);
    expect(core.status()).toMatchObject({ acceptance: 'rolled_back', has_pending: false });
    expect(applied.at(-1)).toBe(applied[0]);
    expect(core.rules().staged.blacklist).toEqual([]);
    expect(actions(core)).toEqual(['apply_started', 'apply_accepted', 'rules_saved', 'apply_started', 'apply_rolledback']);
  });

  it('accept within the window commits; a second accept is refused', () => {
    vi.useFakeTimers();
    const { core, applied } = makeCore();
    startConfirmed(core);
    core.saveRules('whitelist', ['198.51.100.0/24'], 'bob');
    core.apply('bob');
    expect(core.accept('bob')).toMatchObject({ acceptance: 'accepted', has_pending: false });
    vi.advanceTimersByTime(60_000);
    expect(applied).toHaveLength(2);
    expect(() => core.accept('bob')).toThrow(ERR_NOTHING_PENDING);
    expect(core.audit.tail().at(-1)).toMatchObject({ action: 'apply_accepted', actor: 'bob' });
  });

  it('acceptance disabled commits at once', () => {
    const { core } = makeCore({ acceptance: { enabled: false } });
    core.start();
    expect(core.apply('x')).toMatchObject({ acceptance: 'accepted', has_pending: false, pending: null });
  });

  it('a refused apply keeps current rules and records apply_failed', () => {
    const { core, fail } = makeCore();
    startConfirmed(core);
    core.saveRules('custom', ['tcp dport 9 accept'], 'x');
    fail.next = true;
    expect(() => core.apply('x')).toThrow(/refused/);
    expect(core.rules().current.custom).toEqual([]);
    expect(core.status()).toMatchObject({ has_pending: false, staged_changes: true });
    expect(actions(core).at(-1)).toBe('apply_failed');
  });

  it('a restart with a persisted pending apply restores the backup', () => {
    const first = makeCore();
    startConfirmed(first.core);
    first.core.saveRules('blacklist', ['192.0.2.9'], 'x');
    first.core.apply('x');
    first.core.stop(); // as if killed: the pending state stays on disk
    const second = makeCore({}, first.dir);
    second.core.start();
    expect(second.core.status()).toMatchObject({ acceptance: 'rolled_back', has_pending: false });
    expect(second.core.rules().current.blacklist).toEqual([]);
    expect(second.applied[0]).not.toContain('192.0.2.9');
  });

  it('socket dispatch: shapes, validation errors, unknown types', () => {
    const { core } = makeCore();
    startConfirmed(core);
    expect(dispatch(core, { type: 'GET_STATUS' })).toMatchObject({ success: true, data: { acceptance: 'accepted' } });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'tcp', rules: [{ port: '0' }] } })).toMatchObject({ success: false });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'tcp', rules: [{ port: '8000:9000' }] } })).toMatchObject({ success: true });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'udp', rules: [{ port: '9000:8000' }] } })).toMatchObject({ success: false });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'custom', rules: ['accept; flush ruleset'] } })).toMatchObject({ success: false });
    expect(dispatch(core, { type: 'ACCEPT' })).toEqual({ success: false, code: 'NOTHING_PENDING', error: ERR_NOTHING_PENDING });
    expect(dispatch(core, { type: 42 })).toEqual({ success: false, code: 'UNKNOWN_REQUEST', error: 'unknown request type: 42' });
  });

  it('a custom rule nft refuses is rejected at save, naming the rule; staged stays as it was', () => {
    const { core } = makeCore();
    startConfirmed(core);
    const r = dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'custom', rules: ['tcp dport 9 accept', 'tcp dport 9999 nonsense'] } });
    expect(r.success).toBe(false);
    expect(r.error).toContain('custom rule 2 ("tcp dport 9999 nonsense") is not valid nft: Error: syntax error');
    expect(core.rules().staged.custom).toEqual([]);
    expect(dispatch(core, { type: 'IMPORT_RULES', payload: { rules: { custom: ['nonsense'] } } }).error).toContain('custom rule 1');
  });

  it('a socket error that is not the caller\'s names its cause', () => {
    const { core, configFile } = makeCore();
    startConfirmed(core);
    rmSync(configFile);
    const r = dispatch(core, { type: 'SAVE_OPTIONS', payload: { options: { firewall: { port_scan: false } } } });
    expect(r.success).toBe(false);
    expect(r.error).toMatch(/^SAVE_OPTIONS failed: ENOENT: no such file or directory, open '.*config\.json'/);
  });

  it('reload and SAVE_OPTIONS changing the ruleset are pending; rollback restores the config file and the script', () => {
    vi.useFakeTimers();
    const { core, applied, configFile } = makeCore();
    startConfirmed(core);
    const before = readFileSync(configFile, 'utf8');
    core.saveOptions({ firewall: { bogon_filter: true, drop_broadcast: true } }, 'alice');
    expect(core.status()).toMatchObject({ acceptance: 'pending', has_pending: true });
    expect(applied.at(-1)).toContain('meta pkttype broadcast');
    expect(core.config.firewall.drop_broadcast).toBe(true);
    vi.advanceTimersByTime(10_000);
    expect(applied.at(-1)).toBe(applied[0]);
    expect(readFileSync(configFile, 'utf8')).toBe(before);
    expect(readFileSync(`${configFile}.unconfirmed`, 'utf8')).toContain('"drop_broadcast": true');
    expect(core.config.firewall.drop_broadcast).toBe(false);

    writeFileSync(configFile, JSON.stringify({ ...JSON.parse(before), firewall: { drop_multicast: true } }));
    expect(core.reload('signal')).toEqual({ ok: true });
    expect(core.status().has_pending).toBe(true);
    expect(core.reload('signal')).toEqual({ ok: true }); // nothing new: no second change
    writeFileSync(configFile, JSON.stringify({ ...JSON.parse(before), firewall: { drop_anycast: true } }));
    expect(core.reload('signal')).toEqual({ ok: false, error: ERR_APPLY_IN_PROGRESS });
    core.accept('alice');
    expect(actions(core)).toContain('options_reloaded');
  });

  it('an options change that leaves the ruleset alone is not a pending change', () => {
    const { core, applied } = makeCore();
    startConfirmed(core);
    core.saveOptions({ acceptance: { duration: 30 } }, 'alice');
    expect(core.status()).toMatchObject({ has_pending: false, acceptance_duration: 30 });
    expect(applied).toHaveLength(1);
  });

  it('FIREWALL_SELF_CONFIRM: confirmed only when every endpoint answers under the new rules', async () => {
    const up = new Set(['a:1']);
    const { core } = makeCore({}, undefined, {
      selfConfirm: [{ host: 'a', port: 1 }, { host: 'b', port: 2 }],
      probe: (e) => Promise.resolve(up.has(`${e.host}:${e.port}`)),
    });
    core.start();
    expect(core.status().has_pending).toBe(true);
    up.add('b:2');
    await until(() => !core.status().has_pending, 'the self-confirmation');
    expect(core.status().acceptance).toBe('accepted');
    expect(core.audit.tail().at(-1)).toMatchObject({ action: 'apply_accepted', actor: 'self-confirm' });
    core.stop();
  });

  it('a corrupt rules.json is named; the last good copy is used, or the start is refused', () => {
    const first = makeCore();
    startConfirmed(first.core);
    first.core.saveRules('blacklist', ['192.0.2.5'], 'x');
    first.core.stop();
    const file = join(first.dir, 'data', 'rules.json');
    writeFileSync(file, '{"current": ');
    const second = makeCore({}, first.dir);
    expect(second.core.rules().staged.blacklist).toEqual(['192.0.2.5']);
    expect(readFileSync(`${file}.corrupt`, 'utf8')).toBe('{"current": ');
    expect(second.core.audit.tail().at(-1)?.detail).toContain(`${file} is corrupt`);
    writeFileSync(file, '{');
    rmSync(`${file}.last-good`);
    expect(() => makeCore({}, first.dir)).toThrow(`${file} is corrupt`);
  });
});
