// Two-step activation and atomicity against the real kernel, each case in its own namespace pair
// with its own daemon so the 10 s confirmation windows run concurrently.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, NODE, createBed, netnsUnavailable, ping, rulesText, startCore, tableText, writeConfig, type Bed, type CoreProc } from './helpers/netns.ts';

const skip = netnsUnavailable();
if (skip) console.warn(`\n!!! firewall netns acceptance tests SKIPPED: ${skip}\n`);

const DURATION = 10; // the spec's minimum acceptance.duration
const beds: Bed[] = [];
const cores: CoreProc[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function setup(tag: string, extra: Record<string, unknown> = {}) {
  const bed = createBed(tag);
  beds.push(bed);
  const file = writeConfig(bed, { acceptance: { enabled: true, duration: DURATION }, ...extra });
  const core = await startCore(bed, file);
  cores.push(core);
  return { bed, core, file };
}

// A failed assertion skips a test's own stop(): never leave a daemon behind.
afterAll(async () => {
  for (const c of cores) await c.stop();
  for (const b of beds) b.destroy();
});

describe.skipIf(!!skip)('two-step activation in network namespaces', () => {
  it.concurrent('unconfirmed apply is rolled back within duration + 1 s', async () => {
    const { bed, core } = await setup('r');
    const before = rulesText(bed);
    expect(before).toContain('table inet task_firewall');
    await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: [bed.peerIp] });
    const applied = await core.req('APPLY_RULES');
    const t0 = Date.now();
    expect(applied.success).toBe(true);
    expect(applied.data).toMatchObject({ acceptance: 'pending', has_pending: true });
    expect(rulesText(bed)).not.toBe(before);
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(0);
    const status = await core.req('GET_STATUS');
    expect((status.data as { pending: { remaining_seconds: number } }).pending.remaining_seconds).toBeLessThanOrEqual(DURATION);

    const appliedAt = Date.parse((status.data as { pending: { applied_at: string } }).pending.applied_at);
    const mid = await core.req('GET_STATUS');
    // Only meaningful if this machine answered before the window could have closed.
    if (Date.now() < appliedAt + (DURATION - 1) * 1000) expect(mid.data).toMatchObject({ acceptance: 'pending' });

    await sleep(t0 + (DURATION + 1) * 1000 - Date.now());
    // On a heavily loaded box the test itself may lag; the daemon's own audit time is the proof.
    for (let i = 0; i < 100 && rulesText(bed) !== before; i++) await sleep(200);
    expect(rulesText(bed)).toBe(before);
    expect((await core.req('GET_STATUS')).data).toMatchObject({ acceptance: 'rolled_back', has_pending: false });
    const entries = (await core.req('GET_LOG')).data as { action: string; time: string }[];
    const rolledAt = Date.parse(entries.find((e) => e.action === 'apply_rolledback')?.time ?? '');
    expect(rolledAt - appliedAt).toBeGreaterThanOrEqual(DURATION * 1000);
    expect(rolledAt - appliedAt).toBeLessThanOrEqual((DURATION + 1) * 1000);
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(2);
    const log = (await core.req('GET_LOG')).data as { action: string; detail: string }[];
    expect(log.map((e) => e.action)).toContain('apply_rolledback');
    expect(log.find((e) => e.action === 'apply_rolledback')?.detail).toBe('timeout');
    // rules.json: current back to the previous rules.
    const stored = JSON.parse(readFileSync(join(bed.dir, 'data', 'rules.json'), 'utf8'));
    expect(stored.current.blacklist).toEqual([]);
    await core.stop();
  });

  it.concurrent('confirmed apply stays after the window', async () => {
    const { bed, core } = await setup('c');
    await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: [bed.peerIp] });
    expect((await core.req('APPLY_RULES')).success).toBe(true);
    const t0 = Date.now();
    const accepted = await core.req('ACCEPT', { actor: 'tester' });
    expect(accepted).toMatchObject({ success: true, data: { acceptance: 'accepted', has_pending: false } });
    const applied = rulesText(bed);
    expect(applied).toContain(bed.peerIp);
    await sleep(t0 + (DURATION + 1) * 1000 - Date.now());
    expect(rulesText(bed)).toBe(applied);
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(0);
    const log = (await core.req('GET_LOG')).data as { action: string; actor: string }[];
    expect(log.findLast((e) => e.action === 'apply_accepted')?.actor).toBe('tester');
    expect(log.map((e) => e.action)).not.toContain('apply_rolledback');
    await core.stop();
  });

  it.concurrent('kill -9 during the window, then restart: the previous rules are restored', async () => {
    const { bed, core, file } = await setup('k');
    const before = rulesText(bed);
    await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: [bed.peerIp] });
    expect((await core.req('APPLY_RULES')).success).toBe(true);
    await core.kill9();
    // The kernel keeps the unconfirmed rules while no daemon runs.
    expect(rulesText(bed)).not.toBe(before);
    const again = await startCore(bed, file);
    cores.push(again);
    expect(rulesText(bed)).toBe(before);
    expect((await again.req('GET_STATUS')).data).toMatchObject({ acceptance: 'rolled_back', has_pending: false });
    expect(ping(bed, bed.hostIp, 2, 100).received).toBe(2);
    await again.stop();
  });

  it.concurrent('a graceful stop during the window restores the previous rules at once', async () => {
    const { bed, core } = await setup('s');
    const before = rulesText(bed);
    await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: [bed.peerIp] });
    expect((await core.req('APPLY_RULES')).success).toBe(true);
    expect(rulesText(bed)).not.toBe(before);
    await core.stop();
    expect(rulesText(bed)).toBe(before);
    const stored = JSON.parse(readFileSync(join(bed.dir, 'data', 'rules.json'), 'utf8'));
    expect(stored).toMatchObject({ pending: null, acceptance: 'rolled_back', current: { blacklist: [] } });
  });

  it.concurrent('a custom rule nft refuses is refused at save, naming the rule; the ruleset stays byte-identical', async () => {
    const { bed, core } = await setup('b');
    const before = tableText(bed);
    await core.req('SAVE_RULES', { rule_type: 'whitelist', rules: ['192.0.2.7'] });
    const saved = await core.req('SAVE_RULES', { rule_type: 'custom', rules: ['tcp dport 22 accept', 'tcp dport 9999 this-is-not-nft'] });
    expect(saved.success).toBe(false);
    expect(saved.error).toContain('custom rule 2 ("tcp dport 9999 this-is-not-nft") is not valid nft');
    expect(saved.error).not.toContain('add table');
    expect(((await core.req('GET_RULES')).data as { staged: { custom: string[] } }).staged.custom).toEqual([]);
    expect(tableText(bed)).toBe(before);
    // The valid part still applies.
    expect((await core.req('APPLY_RULES')).success).toBe(true);
    expect((await core.req('ACCEPT')).success).toBe(true);
    await core.stop();
  });

  it.concurrent('an invalid config is refused at start and on reload (running rules kept)', async () => {
    const { bed, core, file } = await setup('i');
    const before = tableText(bed);
    writeFileSync(file, JSON.stringify({ socket_path: core.socket, data_dir: join(bed.dir, 'data'), log_dir: join(bed.dir, 'log'), firewall: { syn_flood_limit: 0 } }));
    const r = await core.req('RELOAD_OPTIONS');
    expect(r.success).toBe(false);
    expect(r.error).toContain('firewall.syn_flood_limit');
    expect(tableText(bed)).toBe(before);
    await core.stop();

    const refused = spawnSync('ip', ['netns', 'exec', bed.host, NODE, CLI, 'core', '--config', file], { encoding: 'utf8', timeout: 20_000 });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('firewall.syn_flood_limit');
  });
});
