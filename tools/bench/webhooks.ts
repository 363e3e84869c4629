/**
 * Webhook delivery benchmark: task events published to JetStream (as the tasks service's outbox
 * relay does), consumed by the webhook service, stored as delivery rows and sent, signed, to a
 * local receiver (its own process, lib/webhook-receiver.ts) that verifies every X-Service-Signature
 * in constant time. Reports signed deliveries per second and the latency from event commit (the
 * publish call) to the receiver's 2xx, p50/p99, and the CPU this process (webhook service, bus
 * client, the events' publisher), the receiver and PostgreSQL spent per delivery (ratios of those
 * survive a noisy machine better than rates do). Run with
 * `node_modules/.bin/node tools/bench/webhooks.ts [--events N] [--only burst1,burst5,burst10,burst10host,steady100,steady500] [--statements]`
 * (`--statements`: the statements that took the most time in each scenario).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { taskEvent, taskEvents } from '@tasksvc/proto';
import { createDatabase, createLogger, createNatsBus, createPool, encryptSecret, loadConfig, startLocalPostgres, startService } from '@tasksvc/runtime';
import { webhookService } from '@tasksvc/webhook';
import { startNats } from '../testenv/nats.ts';
import { pidCpuMs, postgresCpuMs, processCpuMs } from './lib/cpu.ts';
import type { ReceiverReport } from './lib/webhook-receiver.ts';
import { percentile, table } from './lib/stats.ts';

const { values } = parseArgs({
  options: { events: { type: 'string', default: '2000' }, only: { type: 'string', default: 'burst1,burst5,burst10,burst10host,steady100,steady500' }, statements: { type: 'boolean', default: false } },
});
const ONLY = new Set(values.only.split(',').map((s) => s.trim()));
const EVENTS = Number(values.events);
const SECRET = 'bench-signing-secret-0123456789';
/** receiving hosts (ports of the receiver): as many as the largest scenario has endpoints */
const RECEIVERS = 10;
const KEY = 'ab'.repeat(32);

const log = createLogger('bench', 'error');
const dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, settings: ['shared_preload_libraries=pg_stat_statements'] }); // statements per delivery
const nats = await startNats({ storeDir: join(dir, 'nats') });

// the receiver: its own process, as a real endpoint is; it reports each (task, endpoint) arrival (wall-clock ms)
const arrived = new Map<string, number>();
let badSignatures = 0;
const receiver = fork(new URL('./lib/webhook-receiver.ts', import.meta.url).pathname, { env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRET: SECRET, WEBHOOK_RECEIVERS: String(RECEIVERS) } });
/** the receiver's base URLs, one per port: each a receiving host of its own */
const receivers = await new Promise<string[]>((resolve, reject) => {
  receiver.once('exit', (code) => reject(new Error(`the receiver exited (${code}) before it listened`)));
  receiver.on('message', (m: ReceiverReport) => {
    if (m.ports) resolve(m.ports.map((port) => `http://127.0.0.1:${port}`));
    for (const [key, at] of m.arrived ?? []) if (!arrived.has(key)) arrived.set(key, at);
    if (m.badSignatures !== undefined) badSignatures = m.badSignatures;
  });
});
/** wall-clock ms, comparable with the receiver's */
const wallNow = () => performance.timeOrigin + performance.now();

const config = loadConfig({
  DATABASE_URL: await createDatabase(pg.url, `bench_${randomUUID().slice(0, 8)}`),
  NATS_URL: nats.url,
  AUTH_SECRET: 'bench-secret-bench-secret-bench-secret-00',
  AUTH_TRUST_HOST: 'true',
  OUTBOUND_ALLOW_LIST: '127.0.0.1',
  TOTP_ENCRYPTION_KEY: KEY,
  LOG_LEVEL: 'error',
});
const pool = createPool(config.DATABASE_URL, log, { max: 20 });
await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
/** Statements run so far in any database of the server (a count, steadier than time on a shared machine). */
const statementsRun = async () => Number((await pool.query<{ n: string }>('SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements')).rows[0]!.n);
const bus = await createNatsBus({ servers: nats.url, name: 'bench-webhooks', log });
const svc = await startService(webhookService, { config, bus, pool, log });

/** rows per outbox relay round (runtime outbox.ts's default batch) */
const RELAY_ROUND = 200;

interface Scenario {
  /** for --only */
  id: string;
  name: string;
  events: number;
  endpoints: number;
  /** events per second; 0 = as fast as the bus takes them */
  rate: number;
  /** every endpoint on one receiving host (the worker's per-host bound then holds them all); else each on its own */
  oneHost?: boolean;
}

async function run(s: Scenario, opts: { quiet?: boolean } = {}): Promise<(string | number)[]> {
  const userId = randomUUID();
  const paths: string[] = [];
  for (let i = 0; i < s.endpoints; i++) {
    const path = `/${s.name.replace(/\W+/g, '-')}-${i}`;
    paths.push(path);
    const base = receivers[s.oneHost ? 0 : i % receivers.length]!;
    await pool.query('INSERT INTO webhook.endpoints (id, user_id, url, secret_enc) VALUES ($1, $2, $3, $4)', [randomUUID(), userId, `${base}${path}`, encryptSecret(KEY, SECRET)]);
  }
  const committed = new Map<string, number>();
  const publishing: Promise<void>[] = [];
  const cpu0 = { node: processCpuMs(), receiver: pidCpuMs(receiver.pid!), pg: postgresCpuMs(join(dir, 'pg')), statements: await statementsRun() };
  const t0 = performance.now();
  const wall0 = wallNow();
  for (let i = 0; i < s.events; i++) {
    if (s.rate > 0) {
      const due = t0 + (i * 1000) / s.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const message = taskEvent('task.updated', { id: randomUUID(), userId, title: `bench ${i}`, type: 'ONE_TIME', priority: 'NORMAL', createdAt: new Date() });
    committed.set(message.payload.task.id, wallNow());
    const published = bus.publish(taskEvents['task.updated'], message, randomUUID());
    // at a set rate the publishes overlap (as many producers' would); one at a time could not keep 500/s on a loaded machine.
    // A burst goes out as the outbox relay sends a backlog: rounds whose acknowledgements are awaited together.
    publishing.push(published);
    if (s.rate === 0 && publishing.length % RELAY_ROUND === 0) await Promise.all(publishing.slice(-RELAY_ROUND));
  }
  await Promise.all(publishing);
  const expected = s.events * s.endpoints;
  const keys = [...committed.keys()].flatMap((t) => paths.map((p) => `${t} ${p}`));
  const deadline = Date.now() + 300_000;
  // each key is looked up until it has arrived, never again: rescanning the arrived ones every 20 ms
  // cost this process (the measured one) ~5 % of a core at 15,000 deliveries
  for (let next = 0; next < keys.length; ) {
    if (arrived.has(keys[next]!)) next++;
    else {
      if (Date.now() > deadline) throw new Error(`${s.name}: not all deliveries arrived`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const latencies = keys.map((k) => arrived.get(k)! - committed.get(k.split(' ')[0]!)!).sort((a, b) => a - b);
  const last = Math.max(...keys.map((k) => arrived.get(k)!));
  const seconds = (last - wall0) / 1000;
  const cpu = { node: (processCpuMs() - cpu0.node) / expected, receiver: (pidCpuMs(receiver.pid!) - cpu0.receiver) / expected, pg: (postgresCpuMs(join(dir, 'pg')) - cpu0.pg) / expected };
  // the two counting queries themselves are left out
  const statements = (await statementsRun()) - cpu0.statements - 2;
  if (opts.quiet) await pool.query('SELECT pg_stat_statements_reset()');
  else if (values.statements) {
    const { rows: top } = await pool.query<{ calls: string; ms: number; query: string }>('SELECT calls, total_exec_time AS ms, query FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 8');
    console.log(`${s.name}: statements by execution time (ms, calls, per call)`);
    for (const t of top) console.log(`${t.ms.toFixed(0).padStart(7)} ${String(t.calls).padStart(7)} ${(t.ms / Number(t.calls)).toFixed(3).padStart(7)}  ${t.query.replace(/\s+/g, ' ').slice(0, 140)}`);
    await pool.query('SELECT pg_stat_statements_reset()');
  }
  return [s.name, s.events, String(s.endpoints), expected, seconds, expected / seconds, percentile(latencies, 50), percentile(latencies, 99), cpu.node, cpu.receiver, cpu.pg, statements / expected];
}

const scenarios: Scenario[] = [
  { id: 'burst1', name: 'burst, 1 endpoint', events: EVENTS, endpoints: 1, rate: 0 },
  { id: 'burst5', name: 'burst, 5 endpoints', events: Math.round(EVENTS / 2), endpoints: 5, rate: 0 },
  { id: 'burst10', name: 'burst, 10 endpoints', events: Math.round(EVENTS / 2), endpoints: 10, rate: 0 },
  { id: 'burst10host', name: 'burst, 10 endpoints on one host', events: Math.round(EVENTS / 2), endpoints: 10, rate: 0, oneHost: true },
  { id: 'steady100', name: 'steady 100 events/s, 1 endpoint', events: Math.min(EVENTS, 500), endpoints: 1, rate: 100 },
  // the latency target: commit → delivery p99 at a steady 500 events/s
  { id: 'steady500', name: 'steady 500 events/s, 1 endpoint', events: Math.min(EVENTS, 2500), endpoints: 1, rate: 500 },
];
// JIT, the keep-alive sockets and the prepared statements warmed up before the first measured row (it paid for them all)
await run({ id: 'warm-up', name: 'warm-up', events: 500, endpoints: 1, rate: 0 }, { quiet: true });
const rows: (string | number)[][] = [];
for (const s of scenarios) if (ONLY.has(s.id)) rows.push(await run(s));

console.log(
  'Webhook deliveries: JetStream → webhook service (durable consumer, Postgres delivery rows, leased worker, up to 512 claimed and 64 per receiving host in flight, batched ingest and completion) → signed POST to a local receiver (its own process, listening on 10 ports: each endpoint of a scenario on a host and port of its own unless "on one host") that verifies each signature.',
);
console.log('Latency: from the publish of the event (its commit) to the receiver\'s 2xx.\n');
console.log(table(['scenario', 'events', 'endpoints', 'deliveries', 'seconds', 'deliveries/s', 'p50 ms', 'p99 ms', 'node CPU ms/delivery', 'receiver CPU ms/delivery', 'pg CPU ms/delivery', 'statements/delivery'], rows));
console.log(`\nsignature failures: ${badSignatures}; load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores (a shared machine makes these numbers pessimistic)`);

await svc.stop();
await bus.close();
await pool.end();
receiver.kill();
await nats.stop();
await pg.stop();
rmSync(dir, { recursive: true, force: true });
if (badSignatures > 0) process.exit(1);
