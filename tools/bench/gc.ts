/**
 * Whether a V8 garbage-collector flag is worth setting for the services: the single-process mode
 * started once with Node's defaults and once per candidate set of flags, each with its own database
 * on one private PostgreSQL, loaded in turn (interleaved rounds) with task creates and lists
 * (autocannon, as in http.ts). A probe preloaded into each server (lib/gc-probe.ts) reports the
 * collector's pauses, the event loop's p99 delay and resident memory over each load window. The
 * services run with Node's defaults: on this bench no candidate wins on every figure (README,
 * Benchmarks).
 *
 *   node_modules/.bin/node tools/bench/gc.ts [--seconds 6] [--rounds 3] [--connections 10] [--users 500]
 *     [--variants="--single-threaded-gc;--max-semi-space-size=128"]   (sets of flags, `;` apart; with `=`)
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, createPool, freePort, startLocalPostgres } from '@tasksvc/runtime';
import { until } from '../testenv/wait.ts';
import { httpLoad, type LoadResult } from './http-load.ts';
import type { ProbeFigures } from './lib/gc-probe.ts';
import { emitRows } from './lib/report.ts';
import { apiKeys, serverProcess, serving, SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { median } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '10' },
    users: { type: 'string', default: '500' },
    variants: { type: 'string', default: '--single-threaded-gc;--max-semi-space-size=128' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const C = Number(values.connections);
const USERS = Number(values.users);
const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-gc-'));
const pgServer = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });

interface Server {
  name: string;
  load(op: 'create' | 'list'): Promise<{ load: LoadResult; probe: ProbeFigures }>;
  stop(): Promise<void>;
}

async function startServer(name: string, nodeFlags: string[]): Promise<Server> {
  const DATABASE_URL = await createDatabase(pgServer.url, `gc_${randomUUID().slice(0, 8)}`);
  const port = await freePort();
  const probeFile = join(dir, `${port}.json`);
  const probeModule = new URL('./lib/gc-probe.ts', import.meta.url).pathname;
  const child = serverProcess('start.ts', { ...SINGLE_PROCESS_ENV, NODE_OPTIONS: `--import ${probeModule}`, GC_PROBE_FILE: probeFile, DATABASE_URL, PORT: String(port), LOG_LEVEL: 'silent' }, nodeFlags);
  const stop = () => child.stop();
  const url = `http://127.0.0.1:${port}`;
  let seq = 0;
  /** the probe's figures since the last call (it writes them on SIGUSR2; waited for by their sequence number) */
  const probe = async (): Promise<ProbeFigures> => {
    process.kill(child.pid, 'SIGUSR2');
    seq++;
    let p: ProbeFigures | undefined;
    await until(() => {
      try {
        p = JSON.parse(readFileSync(probeFile, 'utf8')) as ProbeFigures;
      } catch {
        return false; // not written yet, or half written
      }
      return p.seq === seq;
    }, 'the GC probe', 10_000);
    return p!;
  };
  try {
    await serving(url, `the single process (${name})`, 120_000);
    const pool = createPool(DATABASE_URL, log);
    const keys = await apiKeys(pool, USERS);
    await pool.end();
    await httpLoad({ url, keys, op: 'create', seconds: SECONDS, connections: C }); // warm-up, and the rows the lists read
    return {
      name,
      async load(op) {
        await probe(); // the window starts here
        const load = await httpLoad({ url, keys, op, seconds: SECONDS, connections: C, serverPids: [child.pid] });
        return { load, probe: await probe() };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

const servers: Server[] = [];
try {
  const variants = [[], ...values.variants.split(';').map((v) => v.split(' ').filter(Boolean))];
  for (const flags of variants) servers.push(await startServer(flags.length ? flags.join(' ') : "Node's defaults", flags));
  const runs = new Map(servers.map((s) => [s, { create: [] as Awaited<ReturnType<Server['load']>>[], list: [] as Awaited<ReturnType<Server['load']>>[] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const op of ['create', 'list'] as const) {
      for (let i = 0; i < servers.length; i++) {
        const s = servers[(i + round) % servers.length]!;
        runs.get(s)![op].push(await s.load(op));
      }
    }
  }
  const rows: (string | number)[][] = [];
  for (const op of ['create', 'list'] as const) {
    for (const s of servers) {
      const rs = runs.get(s)![op];
      const m = (f: (r: (typeof rs)[number]) => number) => median(rs.map(f));
      rows.push([
        op === 'create' ? 'POST /api/tasks' : 'GET /api/tasks (50)',
        s.name,
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
    `The single process with Node's defaults and with other V8 flags, under the same load in turn: autocannon, ${C} connections, ${USERS} users, ${ROUNDS} interleaved rounds of ${SECONDS} s; medians over the rounds. GC figures from perf_hooks 'gc' entries in the server (per 10 s of load), the event loop's delay from monitorEventLoopDelay, resident memory at the end of the window`,
    ['operation', 'server runs with', 'req/s', 'p99 ms', 'server CPU ms / 1k', 'GC pauses / 10 s', 'GC ms / 10 s', 'GC pause p50 ms', 'GC pause max ms', 'event-loop delay p99 ms', 'RSS MB', 'load avg'],
    rows,
  );
} finally {
  for (const s of servers) await s.stop();
  await pgServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
