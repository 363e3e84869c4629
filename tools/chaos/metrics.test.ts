import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { CRON_JOBS, type ServiceName } from '@tasksvc/proto';
import { createLogger, createPool, freePort } from '@tasksvc/runtime';
import { startReceiver, type Receiver } from '../../services/webhook/test/support.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, until } from '../testenv/index.ts';
import { has, scrape, value, type Scrape } from '../testenv/metrics.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { CLUSTER_SERVICES, startCluster, type Cluster } from './cluster.ts';

/**
 * Prometheus metrics of real processes (docs/observability.md): a task create, the webhook delivery
 * it causes and one cron run move exactly the counters they should, in the single-process mode
 * (`npm start`, one registry on METRICS_PORT) and in the distributed mode (each process its own).
 */

const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');

const delta = (before: Scrape, after: Scrape, name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);

async function setUp(url: string, databaseUrl: string, rx: Receiver): Promise<string> {
  const pool = createPool(databaseUrl, createLogger('metrics-test', 'silent'));
  const { authorization } = await createUserWithApiKey(pool);
  await pool.end();
  const hook = await fetch(`${url}/api/settings/webhooks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${rx.url}/hook`, events: ['task.created'] }),
  });
  expect(hook.status, await hook.text()).toBe(201);
  return authorization;
}

/** One task create (201), its webhook delivery, one cron call. */
async function drive(url: string, authorization: string, rx: Receiver): Promise<void> {
  const created = await fetch(`${url}/api/tasks`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'measured' }) });
  expect(created.status, await created.text()).toBe(201);
  await until(() => rx.requests.length >= 1, 'the webhook delivery', 60_000);
  const cron = await fetch(`${url}/api/cron`, { method: 'POST' });
  expect(cron.status, await cron.text()).toBe(200);
}

describe('metrics in the single-process mode (npm start)', () => {
  let child: ChildProcess | undefined;
  let output = '';
  let rx: Receiver;
  let url: string;
  let metricsUrl: string;
  let databaseUrl: string;

  beforeAll(async () => {
    rx = await startReceiver();
    databaseUrl = await testDatabase('metrics_embedded');
    const [port, metricsPort] = [await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl,
      AUTH_SECRET: 'metrics-secret-metrics-secret-metrics-0',
      AUTH_TRUST_HOST: 'true',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RUNTIME_ENV: 'test',
      DISABLE_UPDATE_CHECK: 'true',
      OUTBOUND_ALLOW_LIST: '127.0.0.1',
    };
    child = spawn(node, [join(root, 'tools', 'start.ts')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
    };
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
    // up, and its own cron run at start (startEmbeddedCron) has been counted
    await until(
      async () => {
        const s = await scrape(metricsUrl).catch(() => undefined);
        return s && value(s, 'tasksvc_cron_dispatch_duration_seconds_count') >= 1;
      },
      'npm start to be up and to have run its cron once',
      120_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
  }, 180_000);
  afterAll(async () => {
    if (child && child.exitCode === null && !child.signalCode) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await rx?.close();
  }, 60_000);

  it('one registry on METRICS_PORT counts the create, the delivery and the cron run exactly once', async () => {
    const authorization = await setUp(url, databaseUrl, rx);
    const before = await scrape(metricsUrl);
    await drive(url, authorization, rx);
    // the delivery is counted once the receiver has answered and it is recorded: poll for it
    const after = await until(async () => {
      const s = await scrape(metricsUrl);
      return delta(before, s, 'tasksvc_webhook_deliveries_total', { outcome: 'delivered' }) >= 1 ? s : undefined;
    }, 'the delivery to be counted');
    const d = (name: string, labels: Record<string, string>) => delta(before, after, name, labels);

    expect(d('tasksvc_http_request_duration_seconds_count', { route: '/api/tasks', method: 'POST', status: '201' })).toBe(1);
    expect(d('tasksvc_http_request_duration_seconds_count', { route: '/api/cron', method: 'POST', status: '200' })).toBe(1);
    expect(d('tasksvc_bus_request_duration_seconds_count', { subject: 'tasks.http.create', outcome: 'ok' })).toBe(1);
    expect(d('tasksvc_bus_handler_duration_seconds_count', { subject: 'tasks.http.create', outcome: 'ok' })).toBe(1);
    expect(d('tasksvc_bus_events_published_total', { subject: 'events.task.created', outcome: 'ok' })).toBe(1);
    expect(d('tasksvc_bus_events_consumed_total', { subject: 'events.task.created', durable: 'webhook-deliveries', outcome: 'ok' })).toBe(1);
    expect(d('tasksvc_webhook_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(d('tasksvc_webhook_delivery_attempt_duration_seconds_count', { outcome: 'delivered' })).toBe(1);
    // the embedded cron has claimed this bucket's jobs already: the call is counted, its jobs are skipped
    expect(d('tasksvc_cron_dispatch_duration_seconds_count', { outcome: 'ok' })).toBe(1);

    for (const schema of ['tasks', 'webhook', 'scheduler']) expect(has(after, 'tasksvc_outbox_pending_events', { schema }), schema).toBe(true);
    expect(has(after, 'tasksvc_outbox_oldest_pending_age_seconds', { schema: 'tasks' })).toBe(true);
    expect(value(after, 'tasksvc_pg_pool_max_connections', { pool: 'task-service' })).toBe(20);
    expect(has(after, 'tasksvc_pg_pool_connections', { pool: 'task-service' })).toBe(true);
    expect(has(after, 'nodejs_eventloop_lag_seconds')).toBe(true);
    expect(has(after, 'process_cpu_user_seconds_total')).toBe(true);

    // the public port never serves them
    const pub = await fetch(`${url}/metrics`);
    expect(pub.headers.get('content-type') ?? '').not.toMatch(/version=0\.0\.4|openmetrics/);
    expect(await pub.text()).not.toContain('tasksvc_');
  });
});

describe('metrics in the distributed mode (one process per service)', () => {
  let cluster: Cluster;
  let rx: Receiver;

  beforeAll(async () => {
    rx = await startReceiver();
    cluster = await startCluster({ OUTBOUND_ALLOW_LIST: '127.0.0.1' });
    await cluster.ready(120_000);
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
    await rx?.close();
  }, 60_000);

  const scrapeAll = async (): Promise<Map<ServiceName, Scrape>> => new Map(await Promise.all(CLUSTER_SERVICES.map(async (n) => [n, await scrape(cluster.metricsUrl(n))] as const)));

  it('each process counts its own part of the create, the delivery and the cron run exactly once', async () => {
    const authorization = await setUp(cluster.url, cluster.databaseUrl, rx);
    const before = await scrapeAll();
    await drive(cluster.url, authorization, rx);
    const after = await until(async () => {
      const all = await scrapeAll();
      return delta(before.get('webhook')!, all.get('webhook')!, 'tasksvc_webhook_deliveries_total', { outcome: 'delivered' }) >= 1 ? all : undefined;
    }, 'the delivery to be counted');
    const d = (svc: ServiceName, name: string, labels: Record<string, string>) => delta(before.get(svc)!, after.get(svc)!, name, labels);

    // gateway: the HTTP requests and the bus request it sent
    expect(d('gateway', 'tasksvc_http_request_duration_seconds_count', { route: '/api/tasks', method: 'POST', status: '201' })).toBe(1);
    expect(d('gateway', 'tasksvc_http_request_duration_seconds_count', { route: '/api/cron', method: 'POST', status: '200' })).toBe(1);
    expect(d('gateway', 'tasksvc_bus_request_duration_seconds_count', { subject: 'tasks.http.create', outcome: 'ok' })).toBe(1);
    expect(d('gateway', 'tasksvc_bus_handler_duration_seconds_count', { subject: 'tasks.http.create' })).toBe(0);
    // tasks: the request it answered and the event its relay published
    expect(d('tasks', 'tasksvc_bus_handler_duration_seconds_count', { subject: 'tasks.http.create', outcome: 'ok' })).toBe(1);
    expect(d('tasks', 'tasksvc_bus_events_published_total', { subject: 'events.task.created', outcome: 'ok' })).toBe(1);
    // webhook: the event it consumed and the delivery it made
    expect(d('webhook', 'tasksvc_bus_events_consumed_total', { subject: 'events.task.created', durable: 'webhook-deliveries', outcome: 'ok' })).toBe(1);
    expect(d('webhook', 'tasksvc_webhook_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(d('webhook', 'tasksvc_webhook_delivery_attempt_duration_seconds_count', { outcome: 'delivered' })).toBe(1);
    // scheduler: one call, each job of the current bucket once (nothing else calls the cron here)
    expect(d('scheduler', 'tasksvc_cron_dispatch_duration_seconds_count', { outcome: 'ok' })).toBe(1);
    for (const job of CRON_JOBS) expect(d('scheduler', 'tasksvc_cron_job_duration_seconds_count', { cron_job: job, outcome: 'ok' }), job).toBe(1);
    expect(d('scheduler', 'tasksvc_cron_job_duration_seconds_count', { cron_job: 'cleanup', outcome: 'ok' })).toBe(1);

    // per process: its own pool, the outboxes its relays own, process metrics
    for (const svc of CLUSTER_SERVICES) {
      const s = after.get(svc)!;
      expect(has(s, 'tasksvc_pg_pool_connections', { pool: svc }), svc).toBe(true);
      expect(has(s, 'nodejs_eventloop_lag_seconds'), svc).toBe(true);
    }
    for (const svc of ['tasks', 'webhook', 'scheduler'] as const) expect(has(after.get(svc)!, 'tasksvc_outbox_pending_events', { schema: svc }), svc).toBe(true);
    expect(has(after.get('gateway')!, 'tasksvc_outbox_pending_events')).toBe(false);
  });
});
