// Issue 23: no path that locks the operator out. Each case runs the real daemon in its own network
// namespace pair, with a live TCP session from the peer, so the windows run concurrently.
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../../../tools/testenv/wait.ts';
import type { Status } from '../src/core.ts';
import {
  CLI,
  NODE,
  concurrentConnects,
  fakeSshd,
  listen,
  liveSession,
  netnsUnavailable,
  rulesText,
  tableText,
  testBeds,
  writeConfig,
  type Bed,
  type CoreProc,
  type LiveSession,
} from './helpers/netns.ts';

const skip = netnsUnavailable();
if (skip) console.warn(`\n!!! firewall lockout netns tests SKIPPED: ${skip}\n`);

const DURATION = 10;

/**
 * The live session carries data while the change is pending. A dropped path never answers, so the
 * echo is awaited for a while (a loaded machine is slow to echo) and the change must still be pending
 * afterwards: an echo that only came after the rollback would prove nothing.
 */
async function expectAliveWhilePending(core: CoreProc, session: LiveSession) {
  expect(await session.roundTrip('pending', 6_000)).toBe(true);
  expect(await status(core)).toMatchObject({ acceptance: 'pending' });
}
const { bed, start, stops, cleanup } = testBeds();
afterAll(cleanup);

const status = async (core: CoreProc) => (await core.req('GET_STATUS')).data as Status;
/**
 * Until the daemon reports `state`. A rollback comes at the window's end (DURATION), but CI at load 25
 * saw three concurrent daemons report it more than 30 s later, so it gets the window and a minute;
 * a failure says what the daemon last reported and logged, to find out why next time.
 */
async function waitState(core: CoreProc, state: Status['acceptance']): Promise<void> {
  let last: Status | undefined;
  const limitMs = state === 'rolled_back' ? (DURATION + 60) * 1000 : 30_000;
  try {
    await until(async () => (last = await status(core)).acceptance === state, `acceptance ${state}`, limitMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status ${JSON.stringify(last)}; the daemon's last output:\n${core.output().slice(-3000)}`, { cause: err });
  }
}

/** Open 7000 (echo listener) in confirmed rules and hold a live session to it from the peer. */
async function withSession(b: Bed, core: CoreProc) {
  expect((await core.req('SAVE_RULES', { rule_type: 'tcp', rules: [{ port: '22', ssh: true }, { port: '7000' }] })).success).toBe(true);
  expect((await core.req('APPLY_RULES')).success).toBe(true);
  expect((await core.req('ACCEPT')).success).toBe(true);
  stops.push(listen(b, [7000]).stop);
  const session = liveSession(b, b.hostIp, 7000);
  stops.push(session.close);
  await session.ready;
  // a precondition, not a firewall window: on a loaded machine the four processes on the echo path may take seconds
  expect(await session.roundTrip('before', 15_000)).toBe(true);
  return session;
}

describe.skipIf(!!skip)('no lockout (issue 23) in network namespaces', { timeout: 180_000 }, () => {
  it.concurrent('23.1 SIGHUP turning the bogon filter on: pending, the live session survives, rollback restores the ruleset byte for byte', async () => {
    const b = bed('h');
    const file = writeConfig(b, { acceptance: { enabled: true, duration: DURATION } });
    const core = await start(b, file, { env: { FIREWALL_EXTERNAL_INTERFACES: 'vh' } });
    const session = await withSession(b, core);
    const before = rulesText(b);
    const configBefore = readFileSync(file, 'utf8');

    writeConfig(b, { acceptance: { enabled: true, duration: DURATION }, firewall: { bogon_filter: true } });
    core.proc.kill('SIGHUP');
    await waitState(core, 'pending');
    expect(rulesText(b)).toContain('iifname "vh" ip saddr { 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 }');
    // The admin's session stays; new connections from the RFC 1918 peer on the external interface do not.
    await expectAliveWhilePending(core, session);
    expect(concurrentConnects(b, b.hostIp, 7000, 1, 1500)).toBe(0);

    await waitState(core, 'rolled_back');
    expect(rulesText(b)).toBe(before);
    expect(readFileSync(file, 'utf8')).toBe(configBefore);
    expect(await session.roundTrip('after', 15_000)).toBe(true);
    expect(concurrentConnects(b, b.hostIp, 7000, 1, 3000)).toBe(1);
    const log = (await core.req('GET_LOG')).data as { action: string; detail: string }[];
    expect(log.at(-1)).toMatchObject({ action: 'apply_rolledback', detail: 'timeout' });
  });

  it.concurrent('23.1 SAVE_OPTIONS and RELOAD_OPTIONS are pending changes too; rollback is byte for byte', async () => {
    const b = bed('o');
    const file = writeConfig(b, { acceptance: { enabled: true, duration: DURATION } });
    const core = await start(b, file);
    const session = await withSession(b, core);
    const before = rulesText(b);
    const configBefore = readFileSync(file, 'utf8');

    expect((await core.req('SAVE_OPTIONS', { options: { firewall: { drop_broadcast: true } } })).success).toBe(true);
    expect(await status(core)).toMatchObject({ acceptance: 'pending', has_pending: true });
    expect(rulesText(b)).toContain('meta pkttype broadcast');
    expect((await core.req('ROLLBACK')).success).toBe(true);
    expect(rulesText(b)).toBe(before);
    expect(readFileSync(file, 'utf8')).toBe(configBefore);
    expect((await core.req('GET_OPTIONS')).data).toMatchObject({ firewall: { drop_broadcast: false } });

    writeConfig(b, { acceptance: { enabled: true, duration: DURATION }, firewall: { drop_multicast: true } });
    expect((await core.req('RELOAD_OPTIONS')).success).toBe(true);
    expect(await status(core)).toMatchObject({ acceptance: 'pending' });
    expect(rulesText(b)).toContain('meta pkttype multicast');
    await expectAliveWhilePending(core, session);
    await waitState(core, 'rolled_back');
    expect(rulesText(b)).toBe(before);
    expect(await session.roundTrip('after', 15_000)).toBe(true);
  });

  it.concurrent('23.2 first start: window too; opens sshd\'s real port and the web port; a live session survives; rollback leaves no table', async () => {
    const b = bed('f');
    stops.push(fakeSshd(b, 2222).stop);
    stops.push(listen(b, [8181, 7000]).stop);
    // The admin's SSH session, open before the daemon's first start.
    const session = liveSession(b, b.hostIp, 2222);
    stops.push(session.close);
    await session.ready;
    const before = tableText(b);
    expect(before).not.toContain('table inet task_firewall {');

    const file = writeConfig(b, { acceptance: { enabled: true, duration: DURATION } });
    const core = await start(b, file, { confirm: false, env: { FIREWALL_WEB_PORT: '8181' } });
    expect(await status(core)).toMatchObject({ acceptance: 'pending', has_pending: true, active: true });
    const tcp = ((await core.req('GET_RULES')).data as { current: { tcp: { port: string }[] } }).current.tcp.map((r) => r.port);
    expect(tcp).toEqual(['22', '2222', '8181']);
    expect(concurrentConnects(b, b.hostIp, 2222, 1, 3000)).toBe(1);
    expect(concurrentConnects(b, b.hostIp, 8181, 1, 3000)).toBe(1);
    expect(concurrentConnects(b, b.hostIp, 7000, 1, 1500)).toBe(0);
    await expectAliveWhilePending(core, session);

    await waitState(core, 'rolled_back');
    expect(tableText(b)).toBe(before);
    expect(await status(core)).toMatchObject({ active: false });
    expect(concurrentConnects(b, b.hostIp, 7000, 1, 3000)).toBe(1);
  });

  it.concurrent('FIREWALL_SELF_CONFIRM: confirmed by the daemon when the endpoint answers; rolled back when the new rules cut it', async () => {
    const b = bed('c');
    stops.push(listen(b, [9100], b.peer).stop);
    const file = writeConfig(b, { acceptance: { enabled: true, duration: DURATION } });
    const core = await start(b, file, { confirm: false, env: { FIREWALL_SELF_CONFIRM: `tcp:${b.peerIp}:9100` } });
    await waitState(core, 'accepted');
    const log = (await core.req('GET_LOG')).data as { action: string; actor: string }[];
    expect(log.at(-1)).toMatchObject({ action: 'apply_accepted', actor: 'self-confirm' });
    const before = rulesText(b);

    // Blacklisting the endpoint's address drops its replies: no self-confirmation, rollback at the window's end.
    expect((await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: [b.peerIp] })).success).toBe(true);
    expect((await core.req('APPLY_RULES')).success).toBe(true);
    await waitState(core, 'rolled_back');
    expect(rulesText(b)).toBe(before);
  });

  it.concurrent('23.4 a bridge created after start is whitelisted without a reload', async () => {
    const b = bed('g');
    const file = writeConfig(b, { acceptance: { enabled: true, duration: DURATION }, container: { enabled: true } });
    const core = await start(b, file);
    expect(tableText(b)).not.toContain('10.77.0.0/24');
    b.inHost(['ip', 'link', 'add', 'br-late', 'type', 'bridge']);
    b.inHost(['ip', 'addr', 'add', '10.77.0.1/24', 'dev', 'br-late']);
    b.inHost(['ip', 'link', 'set', 'br-late', 'up']);
    await until(() => /ip saddr 10\.77\.0\.0\/24 accept/.test(tableText(b)), 'the new bridge network in the ruleset');
    expect(await status(core)).toMatchObject({ has_pending: false });
    const log = (await core.req('GET_LOG')).data as { action: string }[];
    expect(log.at(-1)).toMatchObject({ action: 'environment_applied' });
  });

  it.concurrent('23.8 a corrupt rules.json is named (last good copy used, or refusal); without CAP_NET_ADMIN the core refuses to start', async () => {
    const b = bed('x');
    const file = writeConfig(b, { acceptance: { enabled: true, duration: DURATION } });
    const core = await start(b, file);
    expect((await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: ['192.0.2.44'] })).success).toBe(true);
    await core.stop();
    const rulesFile = join(b.dir, 'data', 'rules.json');
    writeFileSync(rulesFile, '{"current": {');
    const again = await start(b, file);
    expect(again.output()).toContain(`${rulesFile} is corrupt`);
    expect(((await again.req('GET_RULES')).data as { staged: { blacklist: string[] } }).staged.blacklist).toEqual(['192.0.2.44']);
    await again.stop();

    writeFileSync(rulesFile, '{"current": {');
    writeFileSync(`${rulesFile}.last-good`, 'also broken');
    const refused = spawnSync('ip', ['netns', 'exec', b.host, NODE, CLI, 'core', '--config', file], { encoding: 'utf8', timeout: 30_000 });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`${rulesFile} is corrupt`);

    chmodSync(b.dir, 0o755);
    chmodSync(file, 0o644);
    const nobody = spawnSync('ip', ['netns', 'exec', b.host, 'setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', NODE, CLI, 'core', '--config', file], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(nobody.status).toBe(1);
    expect(nobody.stderr).toContain('refusing to start: the core daemon needs root (CAP_NET_ADMIN)');
    expect(nobody.stdout + nobody.stderr).not.toContain('ready');
  });

  it.concurrent('23.10 CLI: status, allow, deny, apply with the countdown, confirm, rollback, log, rules, off', async () => {
    const b = bed('l');
    const file = writeConfig(b, { acceptance: { enabled: true, duration: 60 } });
    await start(b, file);
    const cli = (...args: string[]) => {
      const r = spawnSync(NODE, [CLI, ...args, '--config', file], { encoding: 'utf8', timeout: 30_000 });
      return { status: r.status, out: r.stdout, err: r.stderr };
    };
    expect(cli('status').out).toContain('firewall: active (table inet task_firewall)');
    expect(cli('allow', '443/tcp').out).toContain('staged: allow 443/tcp (tcp)');
    expect(cli('deny', '203.0.113.7').out).toContain('(blacklist)');
    expect(cli('deny', '::ffff:203.0.113.8').status).toBe(0);
    expect(cli('deny', 'nonsense')).toMatchObject({ status: 1, err: expect.stringContaining('neither a port') });
    expect(cli('rules').out).toContain('staged (task-firewall apply):');
    const applied = cli('apply');
    expect(applied.out).toMatch(/PENDING: confirm within (59|60) s/);
    expect(cli('status').out).toMatch(/PENDING: confirm within \d+ s/);
    expect(rulesText(b)).toContain('203.0.113.7');
    expect(rulesText(b)).toContain('203.0.113.8');
    expect(cli('confirm').out).toContain('confirmed');
    expect(cli('confirm')).toMatchObject({ status: 1, err: expect.stringContaining('no applied rules are awaiting confirmation') });
    const confirmed = rulesText(b);

    expect(cli('deny', '443/tcp').status).toBe(0);
    expect(cli('apply').status).toBe(0);
    expect(rulesText(b)).not.toBe(confirmed);
    expect(cli('rollback').out).toContain('rolled back');
    expect(rulesText(b)).toBe(confirmed);
    expect(cli('log', '50').out).toMatch(/apply_rolledback\s+cli:/);

    expect(cli('off').out).toContain('firewall off');
    expect(tableText(b)).not.toContain('table inet task_firewall {');
    expect(cli('status').out).toContain('firewall: off');
    const missing = spawnSync(NODE, [CLI, 'status', '--socket', join(b.dir, 'nope.sock')], { encoding: 'utf8' });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('cannot reach the core daemon');
  });
});

describe('check-config', () => {
  it('prints its report once', () => {
    const r = spawnSync(NODE, [CLI, 'check-config', '/nonexistent/config.json'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect((r.stdout + r.stderr).split('/nonexistent/config.json: 1 problem(s)').length - 1).toBe(1);
  });
});
