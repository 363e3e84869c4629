/**
 * The issue-18 rows: task create and list under HTTP load (tools/bench/http-load.ts, autocannon) for
 * the single-process mode (`tools/start.ts`, logging off and at info, and at info with tracing on:
 * OTLP/HTTP to a receiver in this process, every trace sampled and a fraction of them) and the
 * distributed mode (six service processes and nats-server), against the in-tree direct-pg baseline
 * under the same load: node:http + pg with the minimal SQL (tools/bench/baseline-server.ts: the
 * create is one statement inserting the task and its outbox row, the list is the page query). A
 * second reference row runs the same SQL in this process with no HTTP at all (the floor of the
 * database alone). Same private PostgreSQL per mode, fsync off for all, many users with one API key
 * each. Every system runs for the whole bench and they are measured in interleaved rounds, so each
 * ratio compares figures taken minutes apart at most, under the same conditions; while one is
 * measured the others are paused (SIGSTOP), so their idle wake-ups do not land in its latencies, and
 * a resumed one takes a short warm-up of the same load before it is measured (lib/targets.ts).
 *
 *   node_modules/.bin/node tools/bench/http.ts [--seconds 8] [--rounds 5] [--connections 10] [--users 500]
 *     [--sampled 0.05] [--only floor,off,limits,info,tracing,tracing-sampled,distributed] [--pg bench|defaults]
 *     [--other DIR[,DIR…]]
 *
 * `limits`: the single process at logging off with the per-user write limits on, as shipped (the
 * other rows turn them off); its ratio next to `off`'s is what the limits cost. `--pg defaults`
 * runs every row against the system's PostgreSQL as a distribution ships it: JIT on, fsync on,
 * autovacuum on (the default `bench`: the embedded build, which has no JIT, fsync and autovacuum off).
 *
 * `--other`: other checkouts of this repository (each installed: `node tools/bootstrap.mjs install`
 * in it), e.g. an older commit's `git worktree add`; each adds its own `off` and `distributed` rows
 * (those in `--only`) to the same interleaved rounds, its services run with the node flags and
 * environment of that checkout (its gc-tuning.ts), so a regression between two commits shows as two
 * rows measured minutes apart under the same load rather than two runs on different days.
 *
 * `--only` runs just those rows (the baseline always runs: the ratios are against it); `--sampled`
 * is the fraction of traces the `tracing-sampled` row records (OTEL_TRACES_SAMPLER_ARG).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { busMetrics, createDatabase, createLogger, createPool, freePort, histogram, migrate, startLocalPostgres, type LocalPostgresOptions } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { startCluster } from '../chaos/cluster.ts';
import { startOtlpReceiver } from '../testenv/otlp.ts';
import { until } from '../testenv/wait.ts';
import { httpLoad, type LoadResult } from './http-load.ts';
import { BASELINE_CREATE, BASELINE_LIST, baselineCreateValues } from './lib/baseline-sql.ts';
import { checkout, clusterFrom, type Checkout } from './lib/checkout.ts';
import { emitRows } from './lib/report.ts';
import { apiKeys, serverProcess, serving, SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { BENCH_PG_SETTINGS, DISTRIBUTION_PG, outboxWatch, pause, runRounds, stopAll, WARM_UP_SECONDS, type Op, type Target as BenchTarget } from './lib/targets.ts';
import { measure, median } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    // the ratios are medians over the rounds: with 3, one disturbed round of two (0.64–1.14 for one
    // row in a run of 2026-12-05) could decide a row's figure on this noisy host
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
    users: { type: 'string', default: '500' },
    sampled: { type: 'string', default: '0.05' },
    only: { type: 'string', default: 'floor,off,limits,info,tracing,tracing-sampled,distributed' },
    pg: { type: 'string', default: 'bench' },
    other: { type: 'string' },
  },
});
const ONLY = new Set(values.only.split(',').map((s) => s.trim()));
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const SAMPLED = Number(values.sampled);
const C = Number(values.connections);
const USERS = Number(values.users);
const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-http-'));
const pgDir = join(dir, 'pg');
if (values.pg !== 'bench' && values.pg !== 'defaults') throw new Error(`--pg ${values.pg}: bench or defaults`);
/** PostgreSQL as a distribution ships it (--pg defaults), or the bench's quieter settings */
const PG: Partial<Pick<LocalPostgresOptions, 'binaries' | 'durable' | 'settings'>> = values.pg === 'defaults' ? DISTRIBUTION_PG : { settings: BENCH_PG_SETTINGS };
const pgServer = await startLocalPostgres({ dataDir: pgDir, log, ...PG, settings: [...PG.settings!, 'shared_preload_libraries=pg_stat_statements'] }); // statements per request
const pgPid = Number(readFileSync(join(pgDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);

/** A fresh database on the bench's server, with pg_stat_statements readable in it. */
async function benchDatabase(): Promise<string> {
  const url = await createDatabase(pgServer.url, `bench_${randomUUID().slice(0, 8)}`);
  const pool = createPool(url, log);
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await pool.end();
  return url;
}

type Measured = Pick<LoadResult, 'reqPerSec' | 'p50' | 'p99' | 'non2xx' | 'serverCpuMsPer1k' | 'pgCpuMsPer1k' | 'statementsPerRequest' | 'loadAverage'>;

/** A running system under test: measured with the same load, round after round, in turn with the others (lib/targets.ts). */
interface Target extends BenchTarget<LoadResult> {
  path: string;
}

/** The baseline: node:http + pg, minimal SQL, in its own process, under the same HTTP load. */
async function httpBaseline(): Promise<Target> {
  const DATABASE_URL = await benchDatabase();
  const pool = createPool(DATABASE_URL, log);
  await migrate(pool, { ...tasksService.migrations!, log });
  await pool.end();
  const port = await freePort();
  const server = serverProcess('bench/baseline-server.ts', { DATABASE_URL, PORT: String(port), POOL_MAX: String(C) });
  const url = `http://127.0.0.1:${port}`;
  await serving(url, 'the baseline server', 30_000);
  const keys = Array.from({ length: USERS }, () => randomUUID());
  return {
    path: 'direct pg over HTTP (baseline: node:http + pg)',
    url,
    databaseUrl: DATABASE_URL,
    pids: () => [server.pid],
    load: (op, seconds) => httpLoad({ url, keys, op, seconds, connections: C, serverPids: [server.pid], pgPid, pgUrl: DATABASE_URL }),
    stop: () => server.stop(),
  };
}

/** The floor: the same SQL with `pg` in this process, C callers, no HTTP (measured once, before the rounds). */
async function inProcess(op: Op): Promise<Measured> {
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
    return { reqPerSec: s.opsPerSec, p50: s.p50, p99: s.p99, non2xx: 0, serverCpuMsPer1k: null, pgCpuMsPer1k: null, statementsPerRequest: 1, loadAverage: loadavg()[0]! };
  } finally {
    await pool.end();
  }
}

async function embedded(
  logLevel: string,
  opts: { /** fraction of traces sampled (OTEL_TRACES_SAMPLER_ARG); tracing off when absent */ sampled?: number; /** the write limits on, as shipped */ limits?: boolean; /** its tools/start.ts instead of this one's */ from?: Checkout } = {},
): Promise<Target> {
  const DATABASE_URL = await benchDatabase();
  const port = await freePort();
  // tracing: a real OTLP/HTTP receiver (JSON) that counts and drops the spans, so the server pays the whole export
  const otlp = opts.sampled !== undefined ? await startOtlpReceiver({ keep: false }) : undefined;
  const tracing: Record<string, string> = otlp ? { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER_ARG: String(opts.sampled) } : {};
  const server = serverProcess(opts.from ? join(opts.from.root, 'tools', 'start.ts') : 'start.ts', { ...SINGLE_PROCESS_ENV, ...tracing, ...(opts.limits ? { RATE_LIMIT_WRITES: 'true' } : {}), DATABASE_URL, PORT: String(port), LOG_LEVEL: logLevel });
  const url = `http://127.0.0.1:${port}`;
  try {
    await serving(url, 'the single-process mode', 120_000);
    const pool = createPool(DATABASE_URL, log);
    const keys = await apiKeys(pool, USERS);
    await pool.end();
    const sampled = opts.sampled === 1 ? 'all' : `${(opts.sampled ?? 0) * 100} % of traces`;
    const outbox = outboxWatch(DATABASE_URL);
    return {
      url,
      databaseUrl: DATABASE_URL,
      pids: () => [server.pid],
      settled: outbox.empty,
      path: `HTTP, single process (in-process bus), logging ${logLevel === 'silent' ? 'off' : logLevel}${otlp ? `, tracing on (OTLP/HTTP, ${sampled} sampled)` : ''}${opts.limits ? ', write limits on' : ''}${opts.from ? `, ${opts.from.name}` : ''}`,
      load: async (op, seconds) => {
        const r = await httpLoad({ url, keys, op, seconds, connections: C, serverPids: [server.pid], pgPid, pgUrl: DATABASE_URL });
        // the spans did leave the process (else the row would measure tracing that exports nothing)
        if (otlp) await until(() => otlp.received() > 0, 'spans at the OTLP receiver', 30_000);
        return r;
      },
      async stop() {
        await outbox.end();
        await server.stop();
        await otlp?.close();
      },
    };
  } catch (err) {
    await server.stop();
    await otlp?.close();
    throw err;
  }
}

async function distributed(from?: Checkout): Promise<Target> {
  const cluster = await startCluster(
    { LOG_LEVEL: 'silent', ...from?.env },
    { pg: { ...PG, settings: PG.settings! }, ...(from ? clusterFrom(from) : {}) },
  );
  try {
    await cluster.ready(180_000);
    const pool = createPool(cluster.databaseUrl, log);
    const keys = await apiKeys(pool, USERS);
    await pool.end();
    const outbox = outboxWatch(cluster.databaseUrl);
    return {
      path: `HTTP, distributed (6 processes, NATS)${from ? `, ${from.name}` : ''}`,
      url: cluster.url,
      databaseUrl: cluster.databaseUrl,
      pids: () => cluster.pids(),
      settled: outbox.empty,
      load: (op, seconds) => httpLoad({ url: cluster.url, keys, op, seconds, connections: C, serverPids: cluster.pids(), pgUrl: cluster.databaseUrl }),
      async stop() {
        await outbox.end();
        await cluster.stop();
      },
    };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/** The machine's busy share of its CPU time over `ms` (from /proc/stat: everything but idle and iowait). */
async function machineBusy(ms: number): Promise<number> {
  const read = () => {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    return { total, idle: f[3]! + f[4]! };
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  return 1 - (b.idle - a.idle) / (b.total - a.total);
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const meanOrNull = (xs: (number | null)[]) => (xs.some((x) => x === null) ? null : mean(xs as number[]));
const spread = (xs: number[]) => (xs.length > 1 ? `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}` : xs[0]!.toFixed(2));

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

const targets: Target[] = [];
try {
  const floor = ONLY.has('floor') ? { create: await inProcess('create'), list: await inProcess('list') } : undefined;
  // every target runs from here to the end, each with its own database; they are measured in turn,
  // round after round (each round starting one later), so drift in the machine's load or in
  // PostgreSQL's state falls on all of them alike rather than on whichever ran last
  targets.push(await httpBaseline());
  const named = new Map<string, Target>();
  for (const [name, start] of [
    ['off', () => embedded('silent')],
    ['limits', () => embedded('silent', { limits: true })],
    ['info', () => embedded('info')],
    ['tracing', () => embedded('info', { sampled: 1 })],
    ['tracing-sampled', () => embedded('info', { sampled: SAMPLED })],
    ['distributed', () => distributed()],
  ] as const) {
    if (!ONLY.has(name)) continue;
    const t = await start();
    targets.push(t);
    named.set(name, t);
  }
  for (const dir of values.other?.split(',').filter(Boolean) ?? []) {
    const from = await checkout(dir);
    if (ONLY.has('off')) targets.push(await embedded('silent', { from }));
    if (ONLY.has('distributed')) targets.push(await distributed(from));
  }
  for (const t of targets) await t.load('create', SECONDS); // warm-up, and the rows the lists read
  const idle = await machineBusy(5_000); // the background work of every system up and idle
  for (const t of targets) await pause(t);
  const runs = await runRounds(targets, { rounds: ROUNDS, seconds: SECONDS, onRound: (round) => console.log(`round ${round + 1} of ${ROUNDS} done`) });

  const base = targets[0]!;
  /** per round: a target's figure over the baseline's of the same round */
  const perRound = (t: Target, op: Op, f: (r: LoadResult) => number) => runs.get(t)![op].map((r, i) => f(r) / f(runs.get(base)![op][i]!));
  const rows: (string | number)[][] = [];
  for (const op of ['create', 'list'] as const) {
    const operation = op === 'create' ? 'POST /api/tasks' : 'GET /api/tasks (50)';
    const opt = (v: number | null) => (v === null ? '–' : v);
    if (floor) {
      const r = floor[op];
      const b = median(runs.get(base)![op].map((x) => x.reqPerSec));
      rows.push([operation, 'direct pg in this process (no HTTP)', r.reqPerSec, (r.reqPerSec / b).toFixed(2), r.p50, r.p99, '–', r.non2xx, '–', '–', r.statementsPerRequest ?? '–', r.loadAverage]);
    }
    for (const t of targets) {
      const rs = runs.get(t)![op];
      const ratio = perRound(t, op, (r) => r.reqPerSec);
      const p99 = perRound(t, op, (r) => r.p99);
      rows.push([
        operation,
        t.path,
        mean(rs.map((r) => r.reqPerSec)),
        `${median(ratio).toFixed(2)} (${spread(ratio)})`,
        median(rs.map((r) => r.p50)),
        median(rs.map((r) => r.p99)),
        `${median(p99).toFixed(2)} (${spread(p99)})`,
        rs.reduce((a, r) => a + r.non2xx, 0),
        opt(meanOrNull(rs.map((r) => r.serverCpuMsPer1k))),
        opt(meanOrNull(rs.map((r) => r.pgCpuMsPer1k))),
        opt(meanOrNull(rs.map((r) => r.statementsPerRequest))),
        spread(rs.map((r) => r.loadAverage)),
      ]);
    }
  }
  emitRows(
    `HTTP load: autocannon, ${C} connections, ${USERS} users with one API key each; PostgreSQL ${values.pg === 'defaults' ? "as distributions ship it (the system's, JIT on, fsync on, autovacuum on)" : 'embedded (no JIT), fsync and autovacuum off'}; ${ROUNDS} interleaved rounds of ${SECONDS} s per row, each row measured with the other systems paused (SIGSTOP) and after ${WARM_UP_SECONDS} s of the same load unmeasured (the baseline and the single-process rows share one PostgreSQL server, the distributed row has its own). req/s is the mean over the rounds; ratios are the median over the rounds of (row ÷ baseline in the same round), with their range. With every system up and none loaded the machine was ${(idle * 100).toFixed(1)} % busy (what pausing them takes away)`,
    ['operation', 'path', 'req/s', '× baseline', 'p50 ms', 'p99 ms', 'p99 × baseline', 'non-2xx', 'server CPU ms / 1k', 'PostgreSQL CPU ms / 1k', 'statements / request', 'load avg'],
    rows,
  );
  // the cost of tracing and metrics, against the row at info of the same round
  const info = named.get('info');
  const cost: (string | number)[][] = [];
  for (const [what, name] of [['tracing on, all traces sampled', 'tracing'], [`tracing on, ${SAMPLED * 100} % of traces sampled`, 'tracing-sampled']] as const) {
    const t = named.get(name);
    if (!info || !t) continue;
    for (const op of ['create', 'list'] as const) {
      const ratio = runs.get(t)![op].map((r, i) => r.reqPerSec / runs.get(info)![op][i]!.reqPerSec);
      cost.push([what, op, median(ratio), spread(ratio), spread(runs.get(t)![op].map((r) => r.loadAverage))]);
    }
  }
  const infoCreate = info && meanOrNull(runs.get(info)!.create.map((r) => r.serverCpuMsPer1k));
  if (infoCreate) {
    // Metrics have no off switch: what a create records is timed on its own instead, as a share of the server CPU per create above.
    const us = metricsRecordingMicros();
    cost.push([`metrics: ${us.toFixed(2)} µs of CPU recorded per create, ${((us / infoCreate) * 100).toFixed(2)} % of the server CPU of a create at info (timed alone: metrics have no off switch)`, 'create', '–', '–', loadavg()[0]!]);
  }
  if (cost.length > 0) {
    emitRows(
      `Tracing and metrics at info: throughput with them over the throughput without (logging info, same rounds); the median over the ${ROUNDS} rounds and its range`,
      ['what', 'operation', '× throughput without', 'range over rounds', 'load avg'],
      cost,
    );
  }
} finally {
  await stopAll(targets);
  await pgServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
