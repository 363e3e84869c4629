// Issue 59 #13: the core killed (SIGKILL) between applying a change and its confirmation, as it runs on
// Kubernetes: the config file read-only (a ConfigMap mount), FIREWALL_SELF_CONFIRM probing endpoints.
// After the restart the kernel, the daemon's status and its readiness answer (ready.ts, what the
// operator's Firewall condition is built from) agree, whatever the environment watcher does next.
// Root only (CI), in its own namespace pair.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../../../tools/testenv/wait.ts';
import type { Status } from '../src/core.ts';
import { NODE, listen, netnsUnavailable, rulesText, testBeds, writeConfig, type Bed, type CoreProc } from './helpers/netns.ts';

const skip = netnsUnavailable();
if (skip) console.warn(`\n!!! firewall killed-apply netns test (issue 59 #13) SKIPPED: ${skip}\n`);
const READY = fileURLToPath(new URL('../src/ready.ts', import.meta.url));
const { bed, start, stops, cleanup } = testBeds();
afterAll(cleanup);

const status = async (core: CoreProc) => (await core.req('GET_STATUS')).data as Status;
/** The readiness probe as the kubelet runs it (exec in the pod: the host namespace here). */
const probe = (b: Bed) => {
  const r = spawnSync('ip', ['netns', 'exec', b.host, NODE, READY, '--socket', join(b.dir, 'core.sock')], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, line: r.stdout.trim() };
};
const audit = (b: Bed) =>
  readFileSync(join(b.dir, 'log', 'audit.log'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { action: string; detail: string });

describe.skipIf(!!skip)('issue 59 #13: a core killed between applying and confirming', { timeout: 180_000 }, () => {
  it('read-only config: after the restart the kernel holds the confirmed rules, the status says rolled back and not in force, the probe fails with RolledBack; a later restart confirms the new options and every view says so', async () => {
    const b = bed('ka');
    // The ConfigMap's directory: config.json only (the daemon's socket, data and log live elsewhere).
    const etc = join(b.dir, 'etc');
    mkdirSync(etc);
    const file = join(etc, 'config.json');
    copyFileSync(writeConfig(b, { acceptance: { enabled: true, duration: 10 }, container: { enabled: true, custom_networks: ['10.244.0.0/16'] } }), file);
    const first = await start(b, file, { readOnlyDir: etc });
    const confirmed = rulesText(b);
    expect(probe(b)).toMatchObject({ code: 0, line: expect.stringMatching(/^Enforcing: /) });
    await first.stop();

    // The operator changed the ConfigMap (drop multicast); the new pod's daemon applies it and waits for
    // its self-confirm endpoint, which does not answer yet: the point between applying and confirming.
    const next = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...next, firewall: { drop_multicast: true } }, null, 2));
    const unanswered = { FIREWALL_SELF_CONFIRM: 'tcp:127.0.0.1:7310' };
    const second = await start(b, file, { confirm: false, readOnlyDir: etc, env: unanswered });
    await until(async () => (await status(second)).has_pending && rulesText(b).includes('meta pkttype multicast'), 'the new options applied and pending');
    expect(probe(b)).toMatchObject({ code: 1, line: expect.stringMatching(/^Pending: /) });
    await second.kill9();
    // Nobody is left to roll back: the kernel keeps the unconfirmed options until the restart.
    expect(rulesText(b)).toContain('meta pkttype multicast');

    const third = await start(b, file, { confirm: false, readOnlyDir: etc, env: unanswered });
    const agreed = async () => {
      const s = await status(third);
      expect(s).toMatchObject({ acceptance: 'rolled_back', has_pending: false, protection: 'enforcing', kernel: { table: true, matches: true }, in_force: { ok: false, reason: 'RolledBack' } });
      expect(s.in_force.message).toContain(`the options in ${file} are not in force: they were rolled back (daemon restarted during the confirmation window)`);
      expect(s.warning).toBe(s.in_force.message);
      expect(rulesText(b)).not.toContain('meta pkttype multicast');
      const p = probe(b);
      expect(p.code).toBe(1);
      expect(p.line).toBe(`RolledBack: ${s.in_force.message}`);
    };
    await agreed();
    expect(rulesText(b)).toBe(confirmed);
    expect(audit(b).map((e) => e.action)).toContain('config_restore_failed');
    // The environment watcher re-renders the rules when a bridge appears: with the confirmed options.
    b.inHost(['ip', 'link', 'add', 'cni0', 'type', 'bridge']);
    b.inHost(['ip', 'addr', 'add', '10.88.0.1/16', 'dev', 'cni0']);
    b.inHost(['ip', 'link', 'set', 'cni0', 'up']);
    await until(() => audit(b).some((e) => e.action === 'environment_applied'), 'the bridge watcher re-applied the rules');
    await agreed();
    expect(rulesText(b)).toContain('10.88.0.0/16');

    // The other consistent end: the next start applies the file's options again and its endpoint
    // answers now, so they are confirmed, and the status, the probe and the kernel say so.
    await third.kill9();
    stops.push(listen(b, [7310]).stop);
    const fourth = await start(b, file, { confirm: false, readOnlyDir: etc, env: unanswered });
    await until(async () => (await status(fourth)).acceptance === 'accepted', 'the options confirmed by FIREWALL_SELF_CONFIRM');
    expect(await status(fourth)).toMatchObject({ protection: 'enforcing', warning: null, kernel: { table: true, matches: true }, in_force: { ok: true, reason: 'Enforcing' } });
    expect(rulesText(b)).toContain('meta pkttype multicast');
    expect(probe(b)).toMatchObject({ code: 0, line: expect.stringMatching(/^Enforcing: /) });
    await fourth.stop();
  });
});
