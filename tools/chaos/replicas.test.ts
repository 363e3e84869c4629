import { createLogger, createPool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrape, value } from '../testenv/metrics.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { until } from '../testenv/wait.ts';
import { startCluster, type Cluster, type Replica } from './cluster.ts';

/**
 * Two replicas of the tasks service behind one gateway (issue 58, docs/kubernetes.md "Sizing"): a
 * second tasks process on the same NATS queue group, as a Deployment with `replicas: 2` runs it. Both
 * must take requests, and each request exactly one of them, counted from each process's own bus
 * handler histogram. (How much CPU the two spend per request is a figure: tools/bench/sizing.ts.)
 */
const CREATES = 200;
const CREATE = { subject: 'tasks.http.create' };
const HANDLED = 'tasksvc_bus_handler_duration_seconds_count';

describe('two tasks replicas behind one gateway', () => {
  let cluster: Cluster;
  let second: Replica;
  let authorization: string;

  beforeAll(async () => {
    cluster = await startCluster();
    await cluster.ready(240_000);
    second = await cluster.startReplica('tasks');
    await until(async () => (await fetch(second.metricsUrl.replace(/\/metrics$/, '/health')).catch(() => undefined))?.status === 200, 'the second tasks replica ready', 120_000);
    const pool = createPool(cluster.databaseUrl, createLogger('replicas', 'silent'));
    authorization = (await createUserWithApiKey(pool)).authorization;
    await pool.end();
  }, 480_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('both take creates through the one gateway, and every create is handled by exactly one', async () => {
    const urls = [cluster.metricsUrl('tasks'), second.metricsUrl];
    const before = await Promise.all(urls.map(async (u) => value(await scrape(u), HANDLED, CREATE)));
    let next = 0;
    const statuses: number[] = [];
    // ten callers at once, as the bench's load: the queue group spreads what arrives together
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < CREATES) {
          const i = next++;
          const res = await fetch(`${cluster.url}/api/tasks`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title: `replica ${i}` }) });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
      }),
    );
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    const handled = (await Promise.all(urls.map(async (u) => value(await scrape(u), HANDLED, CREATE)))).map((n, i) => n - before[i]!);
    console.log(`[replicas] ${CREATES} creates: first tasks replica handled ${handled[0]}, second ${handled[1]}`);
    expect(handled[0], 'creates the first replica handled').toBeGreaterThan(0);
    expect(handled[1], 'creates the second replica handled').toBeGreaterThan(0);
    expect(handled[0]! + handled[1]!).toBe(CREATES);
    expect(second.exited()).toBeUndefined();
  }, 120_000);
});
