// FirewallCore's state machine and files without root: the apply function here only records the
// scripts it is given (the kernel side of the same flows is tested in acceptance.netns.test.ts).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../src/config.ts';
import { ERR_APPLY_IN_PROGRESS, ERR_NOTHING_PENDING, FirewallCore } from '../src/core.ts';
import { dispatch } from '../src/socket.ts';

function makeCore(raw: Record<string, unknown> = {}, dir = mkdtempSync(join(tmpdir(), 'fw-core-'))) {
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

afterEach(() => {
  vi.useRealTimers();
});

describe('FirewallCore (recording apply function)', () => {
  it('first start writes rules.json with SSH open, the version cache, and enforces the rules', () => {
    const { core, applied, dir } = makeCore();
    core.start();
    expect(applied).toHaveLength(1);
    expect(applied[0]).toContain('tcp dport { 22 } accept');
    const stored = JSON.parse(readFileSync(join(dir, 'data', 'rules.json'), 'utf8'));
    expect(stored).toMatchObject({ current: { tcp: [{ port: '22', ssh: true }] }, pending: null, acceptance: 'idle' });
    expect(JSON.parse(readFileSync(join(dir, 'data', 'version.json'), 'utf8'))).toHaveProperty('checked_at');
    expect(actions(core)).toEqual(['boot_enforced']);
  });

  it('apply -> pending -> timeout rolls back to the previous rules and resets staged', () => {
    vi.useFakeTimers();
    const { core, applied } = makeCore();
    core.start();
    core.saveRules('blacklist', ['192.0.2.1'], 'alice');
    expect(core.apply('alice')).toMatchObject({ acceptance: 'pending', has_pending: true, pending: { remaining_seconds: 10 } });
    expect(() => core.apply('alice')).toThrow(ERR_APPLY_IN_PROGRESS);
    vi.advanceTimersByTime(9_999);
    expect(core.status().acceptance).toBe('pending');
    vi.advanceTimersByTime(1);
    expect(core.status()).toMatchObject({ acceptance: 'rolled_back', has_pending: false });
    expect(applied.at(-1)).toBe(applied[0]);
    expect(core.rules().staged.blacklist).toEqual([]);
    expect(actions(core)).toEqual(['boot_enforced', 'rules_saved', 'apply_started', 'apply_rolledback']);
  });

  it('accept within the window commits; a second accept is refused', () => {
    vi.useFakeTimers();
    const { core, applied } = makeCore();
    core.start();
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
    core.start();
    core.saveRules('custom', ['nonsense'], 'x');
    fail.next = true;
    expect(() => core.apply('x')).toThrow(/refused/);
    expect(core.rules().current.custom).toEqual([]);
    expect(core.status()).toMatchObject({ has_pending: false, staged_changes: true });
    expect(actions(core).at(-1)).toBe('apply_failed');
  });

  it('a restart with a persisted pending apply restores the backup', () => {
    const first = makeCore();
    first.core.start();
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
    core.start();
    expect(dispatch(core, { type: 'GET_STATUS' })).toMatchObject({ success: true, data: { acceptance: 'idle' } });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'tcp', rules: [{ port: '0' }] } })).toMatchObject({ success: false });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'tcp', rules: [{ port: '8000:9000' }] } })).toMatchObject({ success: true });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'udp', rules: [{ port: '9000:8000' }] } })).toMatchObject({ success: false });
    expect(dispatch(core, { type: 'SAVE_RULES', payload: { rule_type: 'custom', rules: ['accept; flush ruleset'] } })).toMatchObject({ success: false });
    expect(dispatch(core, { type: 'ACCEPT' })).toEqual({ success: false, error: ERR_NOTHING_PENDING });
    expect(dispatch(core, { type: 42 })).toEqual({ success: false, error: 'unknown request type: 42' });
  });
});
