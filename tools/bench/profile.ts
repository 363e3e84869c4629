/**
 * Where a request's time goes in the single-process mode: starts `tools/start.ts` with V8's CPU
 * profiler on, drives task creates or lists with http-load.ts, then prints the heaviest functions
 * (self time during the profiled run, grouped by package or project file) and the heaviest statements from
 * pg_stat_statements, and the single process's event loop delay during the run (how late a 10 ms
 * timer fired: stalls that hold every request up). The .cpuprofile is kept for Chromium's DevTools.
 *
 *   node_modules/.bin/node tools/bench/profile.ts [--op create|list] [--seconds 10] [--warmup 2] [--users 50] [--top 40] [--env K=V,K=V] [--baseline]
 *
 * `--warmup`: seconds of creates before the profiled run (also the tasks a list reads: http.ts's lists read 500–1,500 per user).
 *
 * `--baseline` profiles tools/bench/baseline-server.ts (node:http + pg, the minimal SQL) the same way.
 *
 * `--distributed` profiles the six services as separate processes over NATS (tools/chaos/cluster.ts)
 * and prints each one's CPU per request (user and system time from /proc: V8's profile counts wall
 * time, so a process preempted inside a socket write by the peer it woke shows that write as busy)
 * and its heaviest functions. Its PostgreSQL has no pg_stat_statements.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createDatabase, createLogger, createPool, freePort, migrate, startLocalPostgres } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { CLUSTER_SERVICES, startCluster } from '../chaos/cluster.ts';
import { until } from '../testenv/wait.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { httpLoad } from './http-load.ts';
import { pidCpuSplitMs, procStat } from './lib/cpu.ts';
import { serving, SINGLE_PROCESS_ENV } from './lib/servers.ts';

const { values } = parseArgs({
  options: {
    op: { type: 'string', default: 'create' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    users: { type: 'string', default: '50' },
    top: { type: 'string', default: '40' },
    env: { type: 'string', default: '' },
    baseline: { type: 'boolean', default: false },
    distributed: { type: 'boolean', default: false },
  },
});
const op = values.op === 'list' ? 'list' : 'create';
const root = new URL('../..', import.meta.url).pathname;
const log = createLogger('profile', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'profile-'));
/** What is profiled: its URL, database, processes (by name) and how to stop them so V8 writes their profiles. */
interface Profiled {
  url: string;
  databaseUrl: string;
  /** pg_stat_statements is loaded */
  statements: boolean;
  processes: Map<number, string>;
  /** its metrics listener (the single process only): the event loop delay during the run */
  metricsUrl?: string;
  stop(): Promise<void>;
}

const extra = Object.fromEntries(values.env.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string]));
const profDir = join(dir, 'cpu');
const cpuProf = ['--cpu-prof', `--cpu-prof-dir=${profDir}`];

async function singleProcess(): Promise<Profiled> {
  const pgServer = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, settings: ['shared_preload_libraries=pg_stat_statements'] });
  const databaseUrl = await createDatabase(pgServer.url, 'profile');
  const pool = createPool(databaseUrl, log);
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  if (values.baseline) await migrate(pool, { ...tasksService.migrations!, log });
  await pool.end();
  const port = await freePort();
  const metricsPort = await freePort();
  const env = values.baseline
    ? { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, PORT: String(port), POOL_MAX: '10', ...extra }
    : { PATH: process.env.PATH ?? '', ...SINGLE_PROCESS_ENV, DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: 'info', METRICS_PORT: String(metricsPort), ...extra };
  const program = join(root, 'tools', values.baseline ? 'bench/baseline-server.ts' : 'start.ts');
  const child = spawn(join(root, 'node_modules', '.bin', 'node'), [...cpuProf, program], { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    child.kill(values.baseline ? 'SIGTERM' : 'SIGINT'); // both exit on their own then, so V8 writes the profile
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    await pgServer.stop();
  };
  try {
    await serving(url, 'the single-process mode', 120_000);
  } catch (err) {
    await stop();
    throw err;
  }
  const metricsUrl = values.baseline ? {} : { metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
  return { url, databaseUrl, statements: true, processes: new Map([[child.pid!, values.baseline ? 'baseline' : 'single process']]), ...metricsUrl, stop };
}

async function distributed(): Promise<Profiled> {
  const cluster = await startCluster({ LOG_LEVEL: 'silent', ...extra, NODE_OPTIONS: cpuProf.join(' ') });
  const processes = new Map(cluster.pids().map((pid, i) => [pid, CLUSTER_SERVICES[i]!]));
  const stop = async () => {
    // SIGTERM: each service stops on its own, so V8 writes its profile (cluster.stop() kills)
    for (const pid of processes.keys()) process.kill(pid, 'SIGTERM');
    const gone = (pid: number) => [undefined, 'Z'].includes(procStat(pid)?.[0]);
    await until(async () => [...processes.keys()].every(gone), 'the services to exit', 30_000).catch(() => undefined);
    await cluster.stop();
  };
  try {
    await cluster.ready(180_000);
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return { url: cluster.url, databaseUrl: cluster.databaseUrl, statements: false, processes, stop };
}

/** prom-client samples the event loop with a timer of this period (its default precision); each sample is the whole period. */
const DELAY_SAMPLE_MS = 10;
/** The event loop delay of the profiled process since the previous scrape (prom-client's default gauges), in ms beyond the sampling period. */
async function eventLoopDelay(): Promise<Record<'p50' | 'p99' | 'max', string> | undefined> {
  if (!target.metricsUrl) return undefined;
  const text = await (await fetch(target.metricsUrl)).text();
  const read = (name: string) => (Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000 - DELAY_SAMPLE_MS).toFixed(1);
  return { p50: read('p50'), p99: read('p99'), max: read('max') };
}

const target = values.distributed ? await distributed() : await singleProcess();
let measuredFrom: number;
try {
  const pool = createPool(target.databaseUrl, log);
  const keys: string[] = [];
  for (let i = 0; i < Number(values.users); i++) keys.push(values.baseline ? randomUUID() : (await createUserWithApiKey(pool)).apiKey);
  const { url } = target;
  await httpLoad({ url, keys, op: 'create', seconds: Number(values.warmup), connections: 10 }); // warm-up, rows for the list
  if (target.statements) await pool.query('SELECT pg_stat_statements_reset()');
  await eventLoopDelay(); // a scrape resets prom-client's delay histogram: what the next one reads is the run's
  measuredFrom = performance.now();
  const pids = [...target.processes.keys()];
  const cpu0 = pids.map(pidCpuSplitMs);
  const r = await httpLoad({ url, keys, op, seconds: Number(values.seconds), connections: 10, serverPids: pids, ...(target.statements ? { pgUrl: target.databaseUrl } : {}) });
  const cpu1 = pids.map(pidCpuSplitMs);
  const statements = r.statementsPerRequest === null ? '' : `, ${r.statementsPerRequest.toFixed(2)} statements/request`;
  console.log(`${op}: ${r.reqPerSec.toFixed(0)} req/s, p99 ${r.p99} ms, server CPU ${r.serverCpuMsPer1k?.toFixed(0)} ms/1k${statements}, non-2xx ${r.non2xx}`);
  const delay = await eventLoopDelay();
  if (delay) console.log(`event loop delay during the run (ms late, a timer every ${DELAY_SAMPLE_MS} ms): p50 ${delay.p50}, p99 ${delay.p99}, max ${delay.max}`);
  console.log('\nCPU per request (µs, user + system):');
  pids.forEach((pid, i) => {
    const [user, system] = [cpu1[i]!.user - cpu0[i]!.user, cpu1[i]!.system - cpu0[i]!.system].map((ms) => ((ms * 1000) / r.requests).toFixed(0));
    console.log(`${target.processes.get(pid)!.padEnd(16)} ${user!.padStart(5)} + ${system!.padStart(4)}`);
  });
  if (target.statements) {
    const { rows } = await pool.query<{ calls: string; ms: number; query: string }>(
      `SELECT calls, total_exec_time AS ms, query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT 25`,
    );
    console.log('\nstatements by total execution time (ms, calls, per call):');
    for (const s of rows) console.log(`${s.ms.toFixed(0).padStart(7)} ${String(s.calls).padStart(7)} ${(s.ms / Number(s.calls)).toFixed(3).padStart(7)}  ${s.query.replace(/\s+/g, ' ').slice(0, 150)}`);
  }
  await pool.end();
} finally {
  await target.stop();
}
// the profiled run and the shutdown after it: the last this many µs of the profile (not the start-up or the warm-up's creates)
const measuredUs = (performance.now() - measuredFrom) * 1000;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const where = (u: string) => {
  const m = /node_modules\/\.pnpm\/([^/]+)\//.exec(u) ?? /node_modules\/([^/]+)\//.exec(u);
  if (m) return m[1]!.replace(/@[\d.]+.*$/, '');
  if (u.startsWith('node:')) return u;
  if (u.startsWith('file://')) return u.replace(`file://${root}`, '');
  return u || '(native)';
};

/** The heaviest packages and functions of one process's profile, over the measured run. */
function summarise(name: string, path: string): void {
  const prof = JSON.parse(readFileSync(path, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = prof.startTime;
  prof.samples.forEach((s, i) => {
    at += prof.timeDeltas[i]!;
    if (at >= prof.endTime - measuredUs) self.set(s, (self.get(s) ?? 0) + 1);
  });
  const byPkg = new Map<string, number>();
  const byFn = new Map<string, number>();
  let total = 0;
  let all = 0;
  for (const [id, n] of self) {
    const node = byId.get(id)!;
    all += n;
    if (node.callFrame.functionName === '(idle)') continue;
    total += n;
    const pkg = where(node.callFrame.url).split('/').slice(0, 3).join('/');
    byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + n);
    const fn = `${node.callFrame.functionName || '(anonymous)'} ${where(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + n);
  }
  if (total < all * 0.05) {
    console.log(`\n${name}: idle (busy in ${((total / all) * 100).toFixed(1)} % of the samples)`);
    return;
  }
  const print = (title: string, m: Map<string, number>) => {
    console.log(`\n${name}: ${title} (self samples while busy, % of ${total}):`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
  };
  print('by package / file', byPkg);
  print('by function', byFn);
  console.log(`\nprofile: ${path}`);
}

// V8 names a profile CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile
for (const file of readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'))) {
  const name = target.processes.get(Number(file.split('.')[3]));
  if (name) summarise(name, join(profDir, file));
}
