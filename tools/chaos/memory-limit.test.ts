import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, createPool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, POD_LIMITS } from '../../operator/src/sizing.ts';
import { measure } from '../bench/lib/stats.ts';
import { bundleProcesses } from '../build/bundle.ts';
import { memoryCgroup, type MemoryCgroup } from '../testenv/memcg.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { until } from '../testenv/wait.ts';
import { startCluster, type Cluster, type Replica } from './cluster.ts';

/**
 * The tasks service (the largest: docs/kubernetes.md "Sizing") in a memory cgroup limited to the
 * memory limit the operator gives its pods (operator/src/sizing.ts POD_LIMITS, which
 * tools/k8s/chart.test.ts checks the Deployments against; the request below it only places the pod),
 * through the bench's load: creates then lists of 50 from ten callers at once over a hundred users. The kernel would OOM-kill it at the
 * limit as the kubelet's container would be: it must not be, it must stay up and answer every request.
 * It runs as the image ships it: node with the services' flags on the esbuild bundle of its source
 * (tools/build/bundle.ts, the Dockerfile's `bundle` stage), built into a temp dir before the cluster
 * starts. Its peak is printed (a figure, not asserted beyond the limit itself).
 */
const USERS = 100;
const CREATES = 3_000;
const LISTS = 3_000;
const CALLERS = 10;
const limit = bytes(POD_LIMITS.memory);
const cgroup = memoryCgroup(limit);
if ('unavailable' in cgroup) console.warn(`[memory-limit] SKIPPED: no memory cgroup could be made (needs root and a memory controller): ${cgroup.unavailable}`);

describe.skipIf('unavailable' in cgroup)('the tasks service under its memory limit', () => {
  const cg = cgroup as MemoryCgroup;
  let cluster: Cluster;
  let tasks: Replica;
  let keys: string[];
  let bundleDir: string | undefined;

  beforeAll(async () => {
    bundleDir = mkdtempSync(join(tmpdir(), 'memory-limit-bundle-'));
    const root = new URL('../..', import.meta.url).pathname;
    const tasksBundle = (await bundleProcesses(root, bundleDir, ['tasks'])).get('tasks')!.main;
    cluster = await startCluster({ LOG_LEVEL: 'warn' }, { entries: { tasks: tasksBundle } });
    await cluster.ready(240_000);
    // the cluster's own tasks process leaves; the one in the cgroup is the only one answering
    await cluster.kill('tasks');
    tasks = await cluster.startReplica('tasks', { prefix: cg.prefix });
    await cluster.ready(240_000);
    const pool = createPool(cluster.databaseUrl, createLogger('memory-limit', 'silent'));
    keys = [];
    for (let i = 0; i < USERS; i++) keys.push((await createUserWithApiKey(pool)).authorization);
    await pool.end();
  }, 480_000);

  afterAll(async () => {
    await cluster?.stop();
    cg.remove();
    if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
  });

  it(`is not OOM-killed under ${POD_LIMITS.memory} through ${CREATES} creates and ${LISTS} lists of 50, and answers them all`, async () => {
    const statuses = new Map<number, number>();
    const run = (count: number, request: (i: number) => Promise<Response>) =>
      measure(count, CALLERS, async (i) => {
        const res = await request(i).catch(() => undefined);
        await res?.arrayBuffer();
        statuses.set(res?.status ?? 0, (statuses.get(res?.status ?? 0) ?? 0) + 1);
      });
    const headers = (i: number) => ({ authorization: keys[i % USERS]!, 'content-type': 'application/json' });
    await run(CREATES, (i) => fetch(`${cluster.url}/api/tasks`, { method: 'POST', headers: headers(i), body: JSON.stringify({ title: `load ${i}`, priority: 'NORMAL' }) }));
    await run(LISTS, (i) => fetch(`${cluster.url}/api/tasks?limit=50`, { headers: headers(i) }));
    // the events the creates published are the tasks process's work too (its outbox relay)
    const pool = createPool(cluster.databaseUrl, createLogger('memory-limit', 'silent'));
    await until(async () => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks.outbox WHERE published_at IS NULL')).rows[0]!.n === 0, 'the outbox drained', 120_000).finally(() => pool.end());

    const mb = (n: number) => (n / 2 ** 20).toFixed(0);
    const status = readFileSync(`/proc/${tasks.pid}/status`, 'utf8');
    const kb = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
    console.log(
      `[memory-limit] tasks (bundled) in a cgroup v${cg.version} limited to ${POD_LIMITS.memory}: cgroup peak ${mb(cg.peakBytes())} MiB (${((cg.peakBytes() / limit) * 100).toFixed(0)} % of the limit; ` +
        `the process's RSS peak ${mb(kb('VmHWM'))} MiB, of which file-backed pages such as node's executable are charged to the cgroup that read them first), ` +
        `OOM kills ${cg.oomKills()}, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    // the process is the one in the cgroup (the limit applied to it), not a process beside it
    expect(readFileSync(`/proc/${tasks.pid}/cgroup`, 'utf8')).toContain(cg.path.split('/').at(-1)!);
    expect(cg.oomKills(), 'OOM kills in the cgroup').toBe(0);
    expect(tasks.exited(), `the tasks process exited:\n${tasks.output().slice(-2_000)}`).toBeUndefined();
    expect(statuses.get(201), 'creates answered 201').toBe(CREATES);
    expect(statuses.get(200), 'lists answered 200').toBe(LISTS);
    expect(cg.peakBytes()).toBeGreaterThan(0);
  }, 600_000);
});
