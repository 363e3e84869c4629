/**
 * The issue-18 rows: task create and list under HTTP load (tools/bench/http-load.ts, autocannon) for
 * the single-process mode (`tools/start.ts`, logging off and at info, and at info with tracing on:
 * OTLP/HTTP to a receiver in this process, every request sampled) and the distributed mode (six
 * service processes and nats-server), against the in-tree direct-pg baseline under the same load:
 * node:http + pg with the minimal SQL (tools/bench/baseline-server.ts: the create is one statement
 * inserting the task and its outbox row, the list is the page query). A second reference row runs
 * the same SQL in this process with no HTTP at all (the floor of the database alone). Same private
 * PostgreSQL per mode, fsync off for all, many users with one API key each.
 *
 *   node_modules/.bin/node tools/bench/http.ts [--seconds 10] [--connections 10] [--users 50] [--only floor,off,info,tracing,tracing10,distributed]
 *
 * `--only` runs just those rows (the baseline always runs: the ratios are against it).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { busMetrics, createDatabase, createLogger, createPool, freePort, histogram, migrate, startLocalPostgres, type Pool } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { startCluster } from '../chaos/cluster.ts';
import { startOtlpReceiver } from '../testenv/otlp.ts';
import { until } from '../testenv/wait.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { httpLoad, type LoadResult } from './http-load.ts';
import { BASELINE_CREATE, BASELINE_LIST, baselineCreateValues } from './lib/baseline-sql.ts';
import { emitRows } from './lib/report.ts';
import { measure } from './lib/stats.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '10' }, users: { type: 'string', default: '50' }, only: { type: 'string', default: 'floor,off,info,tracing,tracing10,distributed' } },
});
const ONLY = new Set(values.only.split(',').map((s) => s.trim()));
const SECONDS = Number(values.seconds);
const C = Number(values.connections);
const USERS = Number(values.users);
const root = new URL('../..', import.meta.url).pathname;
const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-http-'));
const pgDir = join(dir, 'pg');
const pgServer = await startLocalPostgres({ dataDir: pgDir, log, settings: ['shared_preload_libraries=pg_stat_statements'] }); // statements per request
const pgPid = Number(readFileSync(join(pgDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);

/** A fresh database on the bench's server, with pg_stat_statements readable in it. */
async function benchDatabase(): Promise<string> {
  const url = await createDatabase(pgServer.url, `bench_${randomUUID().slice(0, 8)}`);
  const pool = createPool(url, log);
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await pool.end();
  return url;
}

async function keysFor(pool: Pool): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < USERS; i++) keys.push((await createUserWithApiKey(pool)).apiKey);
  return keys;
}

type Row = { path: string; r: Pick<LoadResult, 'reqPerSec' | 'p50' | 'p99' | 'non2xx' | 'serverCpuMsPer1k' | 'pgCpuMsPer1k' | 'statementsPerRequest' | 'loadAverage'> };

/** The baseline: node:http + pg, minimal SQL, in its own process, under the same HTTP load. */
async function httpBaseline(): Promise<Record<'create' | 'list', Row>> {
  const DATABASE_URL = await benchDatabase();
  const pool = createPool(DATABASE_URL, log);
  await migrate(pool, { ...tasksService.migrations!, log });
  await pool.end();
  const port = await freePort();
  const child = spawn(join(root, 'node_modules', '.bin', 'node'), [join(root, 'tools', 'bench', 'baseline-server.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL, PORT: String(port), POOL_MAX: String(C) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await until(async () => (await fetch(`${url}/api/health`).catch(() => undefined))?.status === 200, 'the baseline server', 30_000);
    const keys = Array.from({ length: USERS }, () => randomUUID());
    const path = 'direct pg over HTTP (baseline: node:http + pg)';
    const load = (op: 'create' | 'list') => httpLoad({ url, keys, op, seconds: SECONDS, connections: C, serverPids: [child.pid!], pgPid, pgUrl: DATABASE_URL });
    await httpLoad({ url, keys, op: 'create', seconds: 2, connections: C }); // warm-up, and the rows the list reads
    return { create: { path, r: await load('create') }, list: { path, r: await load('list') } };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

/** The floor: the same SQL with `pg` in this process, C callers, no HTTP. */
async function inProcess(op: 'create' | 'list'): Promise<Row> {
  const url = await benchDatabase();
  const pool = createPool(url, log, { max: C });
  await migrate(pool, { ...tasksService.migrations!, log });
  const users = Array.from({ length: USERS }, () => randomUUID());
  // createPool prepares each statement once per connection, as the baseline server names its two
  const create = (i: number) => pool.query(BASELINE_CREATE, baselineCreateValues(users[i % USERS]!, `Task ${i}`, i));
  const list = (i: number) => pool.query(BASELINE_LIST, [users[i % USERS]]);
  try {
    await measure(2_000, C, create); // also the rows the list reads
    const s = await measure(op === 'create' ? 4_000 : 8_000, C, op === 'create' ? create : list);
    return { path: 'direct pg in this process (no HTTP)', r: { reqPerSec: s.opsPerSec, p50: s.p50, p99: s.p99, non2xx: 0, serverCpuMsPer1k: null, pgCpuMsPer1k: null, statementsPerRequest: 1, loadAverage: loadavg()[0]! } };
  } finally {
    await pool.end();
  }
}

async function embedded(logLevel: string, opts: { tracing?: boolean; /** fraction of traces sampled (OTEL_TRACES_SAMPLER_ARG), default all */ sampled?: number } = {}): Promise<Record<'create' | 'list', Row>> {
  const DATABASE_URL = await benchDatabase();
  const port = await freePort();
  // tracing: a real OTLP/HTTP receiver (JSON) that counts and drops the spans, so the server pays the whole export
  const otlp = opts.tracing ? await startOtlpReceiver({ keep: false }) : undefined;
  const env = { ...(otlp ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER_ARG: String(opts.sampled ?? 1) } : {}), PATH: process.env.PATH ?? '', DATABASE_URL, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: logLevel, AUTH_SECRET: 'bench-secret-bench-secret-bench-secret-0', AUTH_TRUST_HOST: 'true', RUNTIME_ENV: 'test', DISABLE_UPDATE_CHECK: 'true', RATE_LIMIT_WRITES: 'false' }; // measure the path, not the per-user write limit (429s)
  const child = spawn(join(root, 'node_modules', '.bin', 'node'), [join(root, 'tools', 'start.ts')], { cwd: root, env, stdio: ['ignore', 'ignore', 'ignore'] });
  const url = `http://127.0.0.1:${port}`;
  try {
    await until(async () => (await fetch(`${url}/api/health`).catch(() => undefined))?.status === 200, 'the single-process mode', 120_000);
    const pool = createPool(DATABASE_URL, log);
    const keys = await keysFor(pool);
    await pool.end();
    const path = `HTTP, single process (in-process bus), logging ${logLevel === 'silent' ? 'off' : logLevel}${otlp ? `, tracing on (OTLP/HTTP, ${opts.sampled === undefined ? 'all' : `${opts.sampled * 100} % of traces`} sampled)` : ''}`;
    const load = (op: 'create' | 'list') => httpLoad({ url, keys, op, seconds: SECONDS, connections: C, serverPids: [child.pid!], pgPid, pgUrl: DATABASE_URL });
    await httpLoad({ url, keys, op: 'create', seconds: 2, connections: C }); // warm-up
    const rows = { create: { path, r: await load('create') }, list: { path, r: await load('list') } };
    // the spans did leave the process (else the row would measure tracing that exports nothing)
    if (otlp) await until(() => otlp.received() > 0, 'spans at the OTLP receiver', 30_000);
    return rows;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await otlp?.close();
  }
}

async function distributed(): Promise<Record<'create' | 'list', Row>> {
  const cluster = await startCluster({ LOG_LEVEL: 'silent' });
  try {
    await cluster.ready(180_000);
    const pool = createPool(cluster.databaseUrl, log);
    const keys = await keysFor(pool);
    await pool.end();
    const path = 'HTTP, distributed (6 processes, NATS)';
    const load = (op: 'create' | 'list') => httpLoad({ url: cluster.url, keys, op, seconds: SECONDS, connections: C, serverPids: cluster.pids(), pgUrl: cluster.databaseUrl });
    await httpLoad({ url: cluster.url, keys, op: 'create', seconds: 2, connections: C });
    return { create: { path, r: await load('create') }, list: { path, r: await load('list') } };
  } finally {
    await cluster.stop();
  }
}

/**
 * CPU µs of the metric updates one create makes in the single-process mode (same instruments and
 * labels): the gateway's HTTP histogram, the bus request on both sides, the event published and its
 * webhook consumption. Averaged over many rounds, after a warm-up.
 */
function metricsRecordingMicros(): number {
  const http = histogram('tasksvc_http_request_duration_seconds', 'as the gateway records it', ['route', 'method', 'status']);
  const once = () => {
    http.observe({ route: '/api/tasks', method: 'POST', status: 201 }, 0.004);
    busMetrics.requests.observe({ subject: 'tasks.http.create', outcome: 'ok' }, 0.003);
    busMetrics.handled.observe({ subject: 'tasks.http.create', outcome: 'ok' }, 0.003);
    busMetrics.published.inc({ subject: 'events.task.created', outcome: 'ok' });
    busMetrics.consumed.inc({ subject: 'events.task.created', durable: 'webhook-deliveries', outcome: 'ok' });
  };
  for (let i = 0; i < 20_000; i++) once();
  const rounds = 200_000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) once();
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / rounds;
}

try {
  const base = await httpBaseline();
  const floor = ONLY.has('floor') ? { create: await inProcess('create'), list: await inProcess('list') } : undefined;
  const quiet = ONLY.has('off') ? await embedded('silent') : undefined;
  const info = ONLY.has('info') ? await embedded('info') : undefined;
  const traced = ONLY.has('tracing') ? await embedded('info', { tracing: true }) : undefined;
  const traced10 = ONLY.has('tracing10') ? await embedded('info', { tracing: true, sampled: 0.1 }) : undefined;
  const dist = ONLY.has('distributed') ? await distributed() : undefined;
  const rows: (string | number)[][] = [];
  for (const op of ['create', 'list'] as const) {
    for (const { path, r } of [base, floor, quiet, info, traced, traced10, dist].flatMap((m) => (m ? [m[op]] : []))) {
      const b = base[op].r;
      const opt = (v: number | null) => (v === null ? '–' : v);
      rows.push([op === 'create' ? 'POST /api/tasks' : 'GET /api/tasks (50)', path, r.reqPerSec, r.reqPerSec / b.reqPerSec, r.p50, r.p99, r.p99 / b.p99, r.non2xx, opt(r.serverCpuMsPer1k), opt(r.pgCpuMsPer1k), opt(r.statementsPerRequest), r.loadAverage]);
    }
  }
  emitRows(
    `HTTP load: autocannon, ${C} connections, ${SECONDS} s per row, ${USERS} users with one API key each; ratios against direct pg over HTTP in the same run`,
    ['operation', 'path', 'req/s', '× baseline', 'p50 ms', 'p99 ms', 'p99 × baseline', 'non-2xx', 'server CPU ms / 1k', 'PostgreSQL CPU ms / 1k', 'statements / request', 'load avg'],
    rows,
  );
  for (const [what, t] of [['all sampled', traced], ['10 % sampled', traced10]] as const) {
    if (info && t) for (const op of ['create', 'list'] as const) console.log(`tracing on (${what}) / off at info, ${op}: ${(t[op].r.reqPerSec / info[op].r.reqPerSec).toFixed(3)} of the throughput`);
  }
  if (info?.create.r.serverCpuMsPer1k) {
    // Metrics have no off switch: what a create records is timed on its own instead, as a share of the server CPU per create above.
    const us = metricsRecordingMicros();
    console.log(`metrics recording per create: ${us.toFixed(2)} µs of CPU, ${((us / info.create.r.serverCpuMsPer1k) * 100).toFixed(2)} % of the server CPU per create at info`);
  }
} finally {
  await pgServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
