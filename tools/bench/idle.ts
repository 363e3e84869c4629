/**
 * Issue 61's idle row: the CPU the system burns with nobody using it, every process counted — the
 * node processes, every PostgreSQL backend (and the workers it reaped: autovacuum, JIT'd queries) and
 * nats-server — over `--seconds` (60) of no load, in both modes, first on a fresh database and then
 * after ANALYZE (the planner's statistics change the plans a periodic query gets, e.g. the webhook
 * claim that JIT compiled at every poll). Target: under 1 % of a core in total.
 *
 *   node_modules/.bin/node tools/bench/idle.ts [--seconds 60] [--pg defaults|bench]
 *
 * `--pg defaults` (the default here): PostgreSQL as distributions ship it (JIT on, fsync on,
 * autovacuum on), where a JIT-compiled poll shows; `--pg bench`: the embedded server the other
 * benches use. The machine's other work does not enter the figures (only these processes' CPU time
 * is read), but a loaded machine stretches each wake-up, so a quiet run is the one to quote.
 *
 * Three windows per system: the first minute after start (10 s after ready), then — from `--steady`
 * (360) seconds after ready, once start-up is over — a fresh database and the same after ANALYZE.
 * Start-up is not idle: V8's memory reducer runs a full, compacting collection in every node process
 * about 2 and again about 3.7 minutes after the process started (a watchdog about 100 s after the
 * previous full collection, while the heap is still larger than it needs; `--trace-gc` shows them as
 * "Mark-Compact (reduce)"), 50–90 ms of CPU each per process and all six at once, which shrinks each
 * service's heap from about 70 to about 30 MB. A window that holds one of them measures start-up;
 * the target is for the system that has been idle for a while.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, createPool, freePort, startLocalPostgres, type LocalPostgresOptions } from '@tasksvc/runtime';
import { CLUSTER_SERVICES, startCluster } from '../chaos/cluster.ts';
import { pidCpuMs, postgresCpuMs } from './lib/cpu.ts';
import { emitRows } from './lib/report.ts';
import { serverProcess, serving, SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { BENCH_PG_SETTINGS, DISTRIBUTION_PG } from './lib/targets.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, pg: { type: 'string', default: 'defaults' }, steady: { type: 'string', default: '360' } } });
if (values.pg !== 'bench' && values.pg !== 'defaults') throw new Error(`--pg ${values.pg}: bench or defaults`);
const SECONDS = Number(values.seconds);
/** the steady windows start this long after ready: after the memory reducer's collections (see above) */
const STEADY_MS = Number(values.steady) * 1000;
/** after ready: migrations, first polls and caches filling are start-up, not idle */
const SETTLE_MS = 10_000;
const PG: Partial<Pick<LocalPostgresOptions, 'binaries' | 'durable' | 'settings'>> = values.pg === 'defaults' ? DISTRIBUTION_PG : { settings: BENCH_PG_SETTINGS };
const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-idle-'));

interface Idle {
  mode: string;
  databaseUrl: string;
  /** CPU ms so far of each counted process: the node processes by name, PostgreSQL, nats-server */
  cpu(): Map<string, number>;
  stop(): Promise<void>;
}

async function single(): Promise<Idle> {
  const pgDir = join(dir, 'single-pg');
  const pg = await startLocalPostgres({ dataDir: pgDir, log, ...PG });
  const databaseUrl = await createDatabase(pg.url, `idle_${randomUUID().slice(0, 8)}`);
  const port = await freePort();
  const proc = serverProcess('start.ts', { ...SINGLE_PROCESS_ENV, DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: 'silent' });
  await serving(`http://127.0.0.1:${port}`, 'the single process', 300_000);
  return {
    mode: 'single process',
    databaseUrl,
    cpu: () => new Map([['single process', pidCpuMs(proc.pid)], ['PostgreSQL', postgresCpuMs(pgDir)]]),
    async stop() {
      await proc.stop();
      await pg.stop();
    },
  };
}

async function distributed(): Promise<Idle> {
  const cluster = await startCluster({ LOG_LEVEL: 'silent' }, { pg: PG });
  await cluster.ready(300_000); // a loaded machine (load 40) took over 3 min
  return {
    mode: 'distributed',
    databaseUrl: cluster.databaseUrl,
    cpu: () =>
      new Map([
        ...CLUSTER_SERVICES.map((n): [string, number] => [n, pidCpuMs(cluster.pid(n)!)]),
        ['PostgreSQL', postgresCpuMs(cluster.postgresDataDir)],
        ['nats-server', pidCpuMs(cluster.natsPid()!)],
      ]),
    stop: () => cluster.stop(),
  };
}

/** Share of one core (%) each part and all of them used over SECONDS of no requests. */
async function idleShare(s: Idle): Promise<{ parts: Map<string, number>; total: number }> {
  const before = s.cpu();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const after = s.cpu();
  const parts = new Map([...after].map(([k, v]) => [k, ((v - before.get(k)!) / (SECONDS * 1000)) * 100]));
  return { parts, total: [...parts.values()].reduce((a, b) => a + b, 0) };
}

const pct = (n: number | undefined) => (n === undefined ? '—' : n.toFixed(2));
const NOT_NODE = new Set(['PostgreSQL', 'nats-server']);
const rows: (string | number)[][] = [];
/** the distributed system's node processes one by one (where an idle wake-up lives) */
const perProcess: (string | number)[][] = [];
try {
  for (const start of [single, distributed]) {
    const s = await start();
    const ready = performance.now();
    try {
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      for (const phase of ['first minute after start', 'fresh database', 'after ANALYZE']) {
        if (phase === 'fresh database') await new Promise((r) => setTimeout(r, Math.max(0, ready + STEADY_MS - performance.now())));
        if (phase === 'after ANALYZE') {
          const pool = createPool(s.databaseUrl, log, { max: 1 });
          await pool.query('ANALYZE');
          await pool.end();
        }
        const { parts, total } = await idleShare(s);
        const node = [...parts].filter(([k]) => !NOT_NODE.has(k));
        rows.push([s.mode, phase, pct(node.reduce((a, [, v]) => a + v, 0)), pct(parts.get('PostgreSQL')), pct(parts.get('nats-server')), pct(total), total < 1 ? 'yes' : 'NO']);
        if (node.length > 1) perProcess.push([phase, ...node.map(([, v]) => pct(v))]);
      }
    } finally {
      await s.stop();
    }
  }
  const title = `Idle CPU (% of one core over ${SECONDS} s with no requests: in the first minute after start, 10 s after ready, then from ${STEADY_MS / 1000} s after ready on a fresh database and after ANALYZE; PostgreSQL ${values.pg === 'defaults' ? 'as distributions ship it: JIT on, fsync on, autovacuum on' : 'embedded: no JIT, autovacuum off'}; load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} cores)`;
  emitRows(title, ['system', 'window', 'node %', 'PostgreSQL %', 'nats-server %', 'total %', 'under 1 %'], rows);
  emitRows(`Idle CPU of each distributed service (% of one core over ${SECONDS} s)`, ['window', ...CLUSTER_SERVICES], perProcess);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
