/**
 * Whether the services' V8 settings pay: the single process and the distributed system (six service
 * processes), each started once as the services run (allocation-site pretenuring turned off
 * in-process, and a service alone with STANDALONE_NODE_FLAGS: services/runtime/src/gc-tuning.ts) and
 * once per variant set of flags, loaded in turn (interleaved rounds, every other system paused) with task creates and
 * lists (autocannon, as in http.ts). A probe preloaded into every service process (lib/gc-probe.ts)
 * reports the collector's pauses, the event loop's p99 delay and resident memory over each load window
 * (a distributed system's: summed over its processes, the worst delay and pause of any).
 *
 *   node_modules/.bin/node tools/bench/gc.ts [--seconds 6] [--rounds 3] [--connections 10] [--users 500]
 *     [--modes single,distributed] [--variants="none;--max-semi-space-size=16;--allocation-site-pretenuring"]
 *
 * A variant replaces the mode's own flags (one equal to them is left out): `none` is node without
 * flags (pretenuring still off), `--allocation-site-pretenuring` on the command line keeps V8's
 * default there, so alone it is V8's defaults throughout; sets are `;` apart, flags in a set space apart.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, createPool, freePort, STANDALONE_NODE_FLAGS, startLocalPostgres } from '@tasksvc/runtime';
import { startCluster } from '../chaos/cluster.ts';
import { until } from '../testenv/wait.ts';
import { httpLoad, type LoadResult } from './http-load.ts';
import type { ProbeFigures } from './lib/gc-probe.ts';
import { emitRows } from './lib/report.ts';
import { apiKeys, serverProcess, serving, SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { median } from './lib/stats.ts';
import { BENCH_PG_SETTINGS, outboxWatch, pause, runRounds, stopAll, type Target } from './lib/targets.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    users: { type: 'string', default: '500' },
    modes: { type: 'string', default: 'single,distributed' },
    variants: { type: 'string', default: 'none;--max-semi-space-size=16;--allocation-site-pretenuring' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const C = Number(values.connections);
const USERS = Number(values.users);
const MODES = values.modes.split(',').map((m) => m.trim()) as ('single' | 'distributed')[];
const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-gc-'));
const pgServer = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, settings: BENCH_PG_SETTINGS });
const probeModule = new URL('./lib/gc-probe.ts', import.meta.url).pathname;

interface Measured {
  load: LoadResult;
  probe: ProbeFigures;
}
interface System extends Target<Measured> {
  mode: 'single' | 'distributed';
  flags: string;
}

/** The probes' figures since the last call, from every process (they write them on SIGUSR2; waited for by sequence number). */
function prober(files: (pid: number) => string, pids: () => number[]): () => Promise<ProbeFigures> {
  let seq = 0;
  return async () => {
    seq++;
    const figures: ProbeFigures[] = [];
    for (const pid of pids()) {
      process.kill(pid, 'SIGUSR2');
      let p: ProbeFigures | undefined;
      await until(() => {
        try {
          p = JSON.parse(readFileSync(files(pid), 'utf8')) as ProbeFigures;
        } catch {
          return false; // not written yet, or half written
        }
        return p.seq === seq;
      }, 'the GC probe', 10_000);
      figures.push(p!);
    }
    const sum = (f: (p: ProbeFigures) => number) => figures.reduce((a, p) => a + f(p), 0);
    const max = (f: (p: ProbeFigures) => number) => Math.max(...figures.map(f));
    // the process that collected the most stands for the pause p50 (the others barely collect under this load)
    const busiest = figures.reduce((a, p) => (p.gcMs > a.gcMs ? p : a));
    return { seq, gcCount: sum((p) => p.gcCount), gcMs: sum((p) => p.gcMs), gcP50Ms: busiest.gcP50Ms, gcMaxMs: max((p) => p.gcMaxMs), delayP99Ms: max((p) => p.delayP99Ms), rssMb: sum((p) => p.rssMb) };
  };
}

async function single(flags: readonly string[], label: string): Promise<System> {
  const DATABASE_URL = await createDatabase(pgServer.url, `gc_${randomUUID().slice(0, 8)}`);
  const port = await freePort();
  const probeFile = join(dir, `${port}.json`);
  const child = serverProcess('start.ts', { ...SINGLE_PROCESS_ENV, NODE_OPTIONS: `--import ${probeModule}`, GC_PROBE_FILE: probeFile, DATABASE_URL, PORT: String(port), LOG_LEVEL: 'silent' }, flags);
  const url = `http://127.0.0.1:${port}`;
  const outbox = outboxWatch(DATABASE_URL);
  const stop = async () => {
    await outbox.end();
    await child.stop();
  };
  try {
    await serving(url, `the single process (${label})`, 120_000);
    const pool = createPool(DATABASE_URL, log);
    const keys = await apiKeys(pool, USERS);
    await pool.end();
    const probe = prober(() => probeFile, () => [child.pid]);
    return {
      mode: 'single',
      flags: label,
      url,
      databaseUrl: DATABASE_URL,
      pids: () => [child.pid],
      settled: outbox.empty,
      async load(op, seconds) {
        await probe(); // the window starts here
        const load = await httpLoad({ url, keys, op, seconds, connections: C, serverPids: [child.pid] });
        return { load, probe: await probe() };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function distributed(flags: readonly string[], label: string): Promise<System> {
  const tag = randomUUID().slice(0, 8);
  const cluster = await startCluster({ LOG_LEVEL: 'silent', NODE_OPTIONS: `--import ${probeModule}`, GC_PROBE_FILE: join(dir, `${tag}-%p.json`) }, { nodeFlags: flags, pgSettings: BENCH_PG_SETTINGS });
  const outbox = outboxWatch(cluster.databaseUrl);
  const stop = async () => {
    await outbox.end();
    await cluster.stop();
  };
  try {
    await cluster.ready(180_000);
    const pool = createPool(cluster.databaseUrl, log);
    const keys = await apiKeys(pool, USERS);
    await pool.end();
    const probe = prober((pid) => join(dir, `${tag}-${pid}.json`), () => cluster.pids());
    return {
      mode: 'distributed',
      flags: label,
      url: cluster.url,
      databaseUrl: cluster.databaseUrl,
      pids: () => cluster.pids(),
      settled: outbox.empty,
      async load(op, seconds) {
        await probe();
        const load = await httpLoad({ url: cluster.url, keys, op, seconds, connections: C, serverPids: cluster.pids() });
        return { load, probe: await probe() };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

const systems: System[] = [];
try {
  const variants = values.variants.split(';').map((v) => (v.trim() === 'none' ? [] : v.split(' ').filter(Boolean)));
  const label = (flags: readonly string[]) =>
    flags.length === 1 && flags[0] === '--allocation-site-pretenuring' ? "V8's defaults (--allocation-site-pretenuring)" : `${flags.length ? flags.join(' ') : 'no flags'} (pretenuring off)`;
  for (const mode of MODES) {
    const own = mode === 'single' ? [] : STANDALONE_NODE_FLAGS;
    const start = mode === 'single' ? single : distributed;
    systems.push(await start(own, `as the services run: ${label(own)}`));
    for (const flags of variants) if (flags.join(' ') !== own.join(' ')) systems.push(await start(flags, label(flags)));
  }
  for (const s of systems) await s.load('create', SECONDS); // warm-up, and the rows the lists read
  for (const s of systems) await pause(s);
  const runs = await runRounds(systems, { rounds: ROUNDS, seconds: SECONDS });
  const rows: (string | number)[][] = [];
  for (const op of ['create', 'list'] as const) {
    for (const s of systems) {
      const rs = runs.get(s)![op];
      const m = (f: (r: Measured) => number) => median(rs.map(f));
      rows.push([
        op === 'create' ? 'POST /api/tasks' : 'GET /api/tasks (50)',
        s.mode === 'single' ? 'single process' : 'distributed (6 processes)',
        s.flags,
        m((r) => r.load.reqPerSec),
        m((r) => r.load.p99),
        m((r) => r.load.serverCpuMsPer1k ?? NaN),
        m((r) => (r.probe.gcCount * 10) / SECONDS),
        m((r) => (r.probe.gcMs * 10) / SECONDS),
        m((r) => r.probe.gcP50Ms),
        m((r) => r.probe.gcMaxMs),
        m((r) => r.probe.delayP99Ms),
        m((r) => r.probe.rssMb),
        `${Math.min(...rs.map((r) => r.load.loadAverage)).toFixed(2)}–${Math.max(...rs.map((r) => r.load.loadAverage)).toFixed(2)}`,
      ]);
    }
  }
  emitRows(
    `The services' V8 settings against other flags, under the same load in turn: autocannon, ${C} connections, ${USERS} users, ${ROUNDS} interleaved rounds of ${SECONDS} s, every other system paused while one is measured; medians over the rounds. GC figures from perf_hooks 'gc' entries in every service process (per 10 s of load; a distributed system's summed over its six processes, its pause p50 that of the process that collected most, its worst pause and event-loop delay those of any), the event loop's delay from monitorEventLoopDelay, resident memory at the end of the window (summed)`,
    ['operation', 'mode', 'node runs with', 'req/s', 'p99 ms', 'server CPU ms / 1k', 'GC pauses / 10 s', 'GC ms / 10 s', 'GC pause p50 ms', 'GC pause max ms', 'event-loop delay p99 ms', 'RSS MB', 'load avg'],
    rows,
  );
} finally {
  await stopAll(systems);
  await pgServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
