import { randomUUID } from 'node:crypto';
import { adminMetrics, adminStats, CRON_JOBS, SERVICE_NAMES, type AdminMetrics } from '@tasksvc/proto';
import { createLogger, createPool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../chaos/cluster.ts';
import { startSystem, type RunningSystem } from '../system.ts';
import { testSystemConfig, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { startTraffic, type Traffic } from './traffic.ts';

/**
 * The admin page's key figures (GET /api/admin/metrics, docs/observability.md "The admin page"):
 * requests, a webhook delivery failure and a retry, a cron run move them by exactly their number,
 * read from the metrics registry of the process that owns each figure: one process under
 * tools/system.ts, a process per service in the distributed mode.
 */

const env = { OUTBOUND_ALLOW_LIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1' };

async function admin(traffic: Traffic): Promise<AdminMetrics> {
  const res = await traffic.call('GET', '/api/admin/metrics');
  const body: unknown = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  return adminMetrics.parse(body);
}

/** Poll until the deliveries have been recorded (the flaky endpoint's retry takes about a second). */
const deliveriesCounted = (traffic: Traffic, before: AdminMetrics, moved: { delivered: number; failed: number; retried: number }) =>
  until(async () => {
    const m = await admin(traffic);
    const w = m.webhooks!;
    return w.delivered - before.webhooks!.delivered >= moved.delivered && w.failed - before.webhooks!.failed >= moved.failed && w.retried - before.webhooks!.retried >= moved.retried ? m : undefined;
  }, 'the deliveries to be counted', 60_000);

/**
 * Requests are counted once answered, so a call sees every request before it but not itself: poll
 * until the count reaches that, then it must be exactly that (never more).
 */
async function requestsSettled(traffic: Traffic, before: AdminMetrics, sentBeforeIt: number) {
  const settled = await until(async () => {
    const m = await admin(traffic);
    const expected = traffic.sent - 1 - sentBeforeIt;
    const moved = m.http!.requests - before.http!.requests;
    return moved >= expected ? { m, moved, expected } : undefined;
  }, 'every request to be counted');
  expect(settled.moved).toBe(settled.expected);
  return settled.m;
}

describe('admin figures in one process (tools/system.ts)', () => {
  const adminId = randomUUID();
  let system: RunningSystem;
  let traffic: Traffic;

  beforeAll(async () => {
    const config = await testSystemConfig({ ...env, ADMIN_USER_IDS: adminId });
    system = await startSystem(config);
    traffic = await startTraffic(system.url, config.DATABASE_URL, { userId: adminId });
  });
  afterAll(async () => {
    await system?.stop();
    await traffic?.close();
  });

  it('requests, a delivery failure and a retry, a cron run move the figures by exactly their number, all from this one process', async () => {
    const sentBefore = traffic.sent;
    const before = await admin(traffic);
    await traffic.createTasks(2);
    await traffic.invalidCreate();
    await traffic.cron();
    // two creates: /flaky delivers both (its first attempt got 500: one retry), /refuse fails both
    const delivered = await deliveriesCounted(traffic, before, { delivered: 2, failed: 2, retried: 1 });
    const after = await requestsSettled(traffic, before, sentBefore);

    expect(after.webhooks!.delivered - before.webhooks!.delivered).toBe(2);
    expect(after.webhooks!.failed - before.webhooks!.failed).toBe(2);
    expect(after.webhooks!.retried - before.webhooks!.retried).toBe(1);
    expect(delivered.webhooks).toEqual(after.webhooks);
    expect(after.http!.clientErrors - before.http!.clientErrors).toBe(1);
    expect(after.http!.serverErrors - before.http!.serverErrors).toBe(0);
    // the recent window: at most 5 minutes (plus one 10-second snapshot step), a part of the total
    expect(after.http!.recent.seconds).toBeGreaterThan(0);
    expect(after.http!.recent.seconds).toBeLessThanOrEqual(310);
    expect(after.http!.recent.requests).toBeGreaterThan(0);
    expect(after.http!.recent.requests).toBeLessThanOrEqual(after.http!.requests);

    // one cron call: nothing else calls it here, so each job of the bucket ran once, here
    expect(after.cron!.calls - before.cron!.calls).toBe(1);
    expect(after.cron!.failedCalls).toBe(0);
    const runs = (m: AdminMetrics, job: string) => m.cron!.jobs.find((j) => j.job === job)?.runs ?? 0;
    for (const job of CRON_JOBS) expect(runs(after, job) - runs(before, job), job).toBe(1);
    // the day's first call also did the daily housekeeping, timed like a job
    expect(runs(after, 'cleanup') - runs(before, 'cleanup')).toBe(1);
    expect(after.cron!.jobs.every((j) => j.failed === 0)).toBe(true);
    // the last run per job is the scheduler's record (the registry holds no times): the page joins
    // the stats' rows with these by job
    const stats = adminStats.parse(await (await traffic.call('GET', '/api/admin/stats')).json());
    expect(stats.cron!.jobs.map((j) => j.job).sort()).toEqual(after.cron!.jobs.map((j) => j.job));

    // one process answered for every service, and every figure names it
    expect(after.missing).toEqual([]);
    expect(after.processes).toHaveLength(1);
    expect(after.processes[0]!.services.sort()).toEqual([...SERVICE_NAMES].sort());
    const one = after.processes[0]!.instance;
    expect([after.http!.instance, after.webhooks!.instance, after.cron!.instance, ...after.outbox.map((o) => o.instance)]).toEqual(Array(3 + after.outbox.length).fill(one));
    expect(after.outbox.map((o) => o.schema)).toEqual(['auth', 'scheduler', 'tasks', 'tasks_game', 'webhook']);
  });

  it('the outbox backlog is the relay lag: a row the relay cannot publish shows as pending, with its age', async () => {
    // An event no one declared: the webhook relay keeps failing on it (and stops behind it), as a
    // relay does whose bus refuses the publish.
    await system.pool.query(`INSERT INTO webhook.outbox (id, subject, payload, created_at) VALUES ($1, 'events.unknown', '{}', clock_timestamp() - interval '1 hour')`, [randomUUID()]);
    const m = await until(async () => {
      const figures = await admin(traffic);
      return figures.outbox.find((o) => o.schema === 'webhook' && o.pending > 0) ? figures : undefined;
    }, 'the stuck row to show');
    const webhook = m.outbox.find((o) => o.schema === 'webhook')!;
    expect(webhook.pending).toBe(1);
    expect(webhook.oldestPendingSeconds).toBeGreaterThanOrEqual(3600);
    expect(m.outbox.find((o) => o.schema === 'tasks')!.pending).toBe(0);
  });

  it('is for administrators only: 403 ADMIN_ONLY for another user, 401 without a credential', async () => {
    const pool = createPool(system.config.DATABASE_URL, createLogger('admin-figures', 'silent'));
    const other = await createUserWithApiKey(pool).finally(() => pool.end());
    const res = await fetch(`${system.url}/api/admin/metrics`, { headers: { authorization: other.authorization } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe('ADMIN_ONLY');
    expect((await fetch(`${system.url}/api/admin/metrics`)).status).toBe(401);
  });
});

describe('admin figures in the distributed mode (one process per service)', () => {
  const adminId = randomUUID();
  let cluster: Cluster;
  let traffic: Traffic;

  beforeAll(async () => {
    cluster = await startCluster({ ...env, ADMIN_USER_IDS: adminId });
    await cluster.ready(120_000);
    traffic = await startTraffic(cluster.url, cluster.databaseUrl, { userId: adminId });
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
    await traffic?.close();
  }, 60_000);

  it('each figure comes from the process of the service that owns it; a service that does not answer is named', async () => {
    const sentBefore = traffic.sent;
    const before = await admin(traffic);
    await traffic.createTasks(1);
    await traffic.cron();
    await deliveriesCounted(traffic, before, { delivered: 1, failed: 1, retried: 1 });
    const after = await requestsSettled(traffic, before, sentBefore);
    expect(after.webhooks!.delivered - before.webhooks!.delivered).toBe(1);
    expect(after.webhooks!.failed - before.webhooks!.failed).toBe(1);
    expect(after.cron!.calls - before.cron!.calls).toBe(1);

    // six processes, one service each; the figures name the process that owns them
    expect(after.missing).toEqual([]);
    expect(after.processes).toHaveLength(6);
    const processOf = (service: string) => after.processes.find((p) => p.services.includes(service))!;
    for (const p of after.processes) expect(p.services).toHaveLength(1);
    expect(after.http!.instance).toBe(processOf('gateway').instance);
    expect(after.webhooks!.instance).toBe(processOf('webhook').instance);
    expect(after.cron!.instance).toBe(processOf('scheduler').instance);
    expect(Object.fromEntries(after.outbox.map((o) => [o.schema, o.instance]))).toEqual({
      auth: processOf('auth').instance,
      scheduler: processOf('scheduler').instance,
      tasks: processOf('tasks').instance,
      tasks_game: processOf('tasks').instance,
      webhook: processOf('webhook').instance,
    });

    // the tasks service goes away: a create is a 5xx, and the page says whose figures are missing
    await cluster.kill('tasks');
    const sentBeforeOutage = traffic.sent;
    const outageBefore = await admin(traffic);
    expect((await traffic.call('POST', '/api/tasks', { title: 'nobody answers' })).status).toBe(503);
    const outage = await requestsSettled(traffic, outageBefore, sentBeforeOutage);
    expect(outage.http!.serverErrors - outageBefore.http!.serverErrors).toBe(1);
    expect(outage.missing).toEqual(['tasks']);
    expect(outage.outbox.map((o) => o.schema)).toEqual(['auth', 'scheduler', 'webhook']);
  });
});
