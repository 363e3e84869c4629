/**
 * The issue-58 rows: what the distributed system costs next to the single process, in the same run.
 *
 *   node_modules/.bin/node tools/bench/footprint.ts [--seconds 8] [--connections 10] [--users 100] [--starts 3]
 *     [--no-bundled] [--why]
 *
 * - Memory: each service process's resident memory (VmRSS) and proportional share (Pss, from
 *   /proc/PID/smaps_rollup: pages shared with the other node processes, as node's own code, counted
 *   once across them) idle once it has trimmed what start-up left (services/runtime/src/memory-trim.ts),
 *   right after the create and list load with its peak (VmHWM), and idle again 25 s after the
 *   loads (a process that grew under them has trimmed again); the single process (`tools/start.ts`) beside them.
 * - Start time: spawn → ready (the services' GET /health on HEALTH_PORT, the gateway's and the
 *   single process's GET /api/health: what a Kubernetes readiness probe sees), each process restarted
 *   `--starts` times on a migrated database (a new replica's case); and the import graph alone in a
 *   fresh node (lib/import-probe.ts): time, module count and the heap it keeps, against node's own
 *   boot in the same run.
 * - Per hop of a create: the gateway's HTTP histogram, the bus histograms of every process (caller
 *   side: the whole round trip; handler side: the service's own work) from their /metrics before and
 *   after the load, so caller − handler is what the bus adds (encode, NATS or the in-process
 *   transport, decode, validation); and the CPU per create and per list of each process, the events
 *   the load published handled (the outbox drained) before it is read.
 *
 * - Precompiled (default; --no-bundled leaves it out): both systems once more from bundles that
 *   esbuild builds from the same source into a temp dir at the start (tools/build/bundle.ts: plain JavaScript,
 *   one file per process plus lazy chunks), so node neither strips types nor resolves the module
 *   files: every row above for both ways of running, in the same run.
 * - --why: where the memory goes, per process: the modules its import loads per package and a heap
 *   snapshot's summary after a full collection (lib/heap-summary.ts: source text and functions per
 *   package, the heap by V8's type), from source and bundled.
 *
 * All systems run throughout; while one is loaded the others are paused (SIGSTOP, lib/targets.ts).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createDatabase, createLogger, createPool, freePort, STANDALONE_NODE_FLAGS, startLocalPostgres, TRIM_POLICY } from '@tasksvc/runtime';
import type { ServiceName } from '@tasksvc/proto';
import { CLUSTER_SERVICES, startCluster, type Cluster } from '../chaos/cluster.ts';
import { until } from '../testenv/wait.ts';
import { httpLoad, type LoadResult } from './http-load.ts';
import { pidCpuMs } from './lib/cpu.ts';
import { trimmedOnce } from './lib/trims.ts';
import type { ImportFigures } from './lib/import-probe.ts';
import { emitRows } from './lib/report.ts';
import { apiKeys, serverProcess, SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { median } from './lib/stats.ts';
import { BENCH_PG_SETTINGS, outboxWatch, signalPids } from './lib/targets.ts';
import { BUNDLE_ENTRIES, bundleProcesses } from '../build/bundle.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '10' },
    users: { type: 'string', default: '100' },
    starts: { type: 'string', default: '3' },
    bundled: { type: 'boolean', default: true },
    why: { type: 'boolean', default: false },
  },
  allowNegative: true,
});
const SECONDS = Number(values.seconds);
const C = Number(values.connections);
const USERS = Number(values.users);
const STARTS = Number(values.starts);
/** idle after the loads before the last reading: over two of the trim's windows (TRIM_POLICY.everyMs) */
const AFTER_LOAD_MS = 2.5 * TRIM_POLICY.everyMs;
const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');
const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-footprint-'));

type Op = 'create' | 'list';

/** Resident memory of a process (MB): VmRSS and VmHWM from status, Pss from smaps_rollup. */
function memory(pid: number): { rss: number; peak: number; pss: number } {
  const kb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) / 1e3;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: kb(status, 'VmRSS'), peak: kb(status, 'VmHWM'), pss: kb(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss') };
}

/** Prometheus histograms (`_sum`/`_count`) and their labels, summed over the scraped processes. */
type Histograms = Map<string, { sum: number; count: number }>;
async function scrape(urls: string[]): Promise<Histograms> {
  const out: Histograms = new Map();
  for (const url of urls) {
    const text = await (await fetch(url)).text();
    for (const m of text.matchAll(/^(tasksvc_(?:http_request|bus_request|bus_handler)_duration_seconds)_(sum|count)\{([^}]*)\} (\S+)$/gm)) {
      const key = `${m[1]}{${m[3]}}`;
      const v = out.get(key) ?? { sum: 0, count: 0 };
      v[m[2] as 'sum' | 'count'] += Number(m[4]);
      out.set(key, v);
    }
  }
  return out;
}
function delta(after: Histograms, before: Histograms): Histograms {
  const out: Histograms = new Map();
  for (const [k, a] of after) {
    const b = before.get(k) ?? { sum: 0, count: 0 };
    if (a.count > b.count) out.set(k, { sum: a.sum - b.sum, count: a.count - b.count });
  }
  return out;
}

/** Spawn → 200 from `healthUrl` (ms; polled, to within 50 ms). */
async function readyAfter(spawnedAt: number, healthUrl: string, what: string): Promise<number> {
  await until(async () => (await fetch(healthUrl, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined))?.status === 200, what, 120_000);
  return performance.now() - spawnedAt;
}

/** Which files a system's processes run: the TypeScript source, or the bundles built from it (process name → files). */
type Build = { kind: 'source' } | { kind: 'bundled'; files: Map<string, { main: string; module: string }> };
const label = (mode: 'single process' | 'distributed', build: Build) => (build.kind === 'bundled' ? `${mode} (bundled)` : mode);

interface System {
  mode: string;
  build: Build;
  url: string;
  /** process name → pid */
  processes(): Map<string, number>;
  metricsUrls: string[];
  keys: string[];
  databaseUrl: string;
  /** restart one process, resolving with spawn → ready (ms) */
  restart(name: string): Promise<number>;
  stop(): Promise<void>;
}

async function single(build: Build): Promise<System> {
  const pg = await startLocalPostgres({ dataDir: join(dir, `pg-${build.kind}`), log, settings: BENCH_PG_SETTINGS });
  const DATABASE_URL = await createDatabase(pg.url, `footprint_${randomUUID().slice(0, 8)}`);
  const port = await freePort();
  const metricsPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { ...SINGLE_PROCESS_ENV, DATABASE_URL, PORT: String(port), METRICS_PORT: String(metricsPort), LOG_LEVEL: 'silent' };
  const start = async () => {
    const t0 = performance.now();
    const proc = serverProcess(build.kind === 'bundled' ? build.files.get('single process')!.main : 'start.ts', env);
    return { proc, ms: await readyAfter(t0, `${url}/api/health`, 'the single process') };
  };
  let { proc } = await start();
  const pool = createPool(DATABASE_URL, log);
  const keys = await apiKeys(pool, USERS);
  await pool.end();
  return {
    mode: label('single process', build),
    build,
    url,
    processes: () => new Map([['single process', proc.pid]]),
    metricsUrls: [`http://127.0.0.1:${metricsPort}/metrics`],
    keys,
    databaseUrl: DATABASE_URL,
    async restart() {
      await proc.stop();
      const s = await start();
      proc = s.proc;
      return s.ms;
    },
    async stop() {
      await proc.stop();
      await pg.stop();
    },
  };
}

async function distributed(build: Build): Promise<System> {
  const entries = build.kind === 'bundled' ? Object.fromEntries(CLUSTER_SERVICES.map((n) => [n, build.files.get(n)!.main])) : undefined;
  const cluster: Cluster = await startCluster({ LOG_LEVEL: 'silent' }, { pgSettings: BENCH_PG_SETTINGS, entries });
  try {
    await cluster.ready(180_000);
    const pool = createPool(cluster.databaseUrl, log);
    const keys = await apiKeys(pool, USERS);
    await pool.end();
    const health = (name: ServiceName) => (name === 'gateway' ? `${cluster.url}/api/health` : cluster.metricsUrl(name).replace(/\/metrics$/, '/health'));
    return {
      mode: label('distributed', build),
      build,
      url: cluster.url,
      processes: () => new Map(CLUSTER_SERVICES.map((n) => [n, cluster.pid(n)!])),
      metricsUrls: CLUSTER_SERVICES.map((n) => cluster.metricsUrl(n)),
      keys,
      databaseUrl: cluster.databaseUrl,
      async restart(name) {
        const service = name as ServiceName;
        // killed, and nats-server no longer routes to it: the new process starts as a new replica would
        await cluster.kill(service);
        const t0 = performance.now();
        await cluster.start(service);
        return readyAfter(t0, health(service), service);
      },
      stop: () => cluster.stop(),
    };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

/** The import graph of `module` (a path from the repo's root, or absolute) in a fresh node with the services' flags (lib/import-probe.ts). */
async function importGraph(module?: string, why = false): Promise<ImportFigures> {
  const args = ['--expose-gc', ...STANDALONE_NODE_FLAGS, join(root, 'tools', 'bench', 'lib', 'import-probe.ts'), ...(why ? ['--why'] : []), ...(module ? [module.startsWith('/') ? module : join(root, module)] : [])];
  const { stdout } = await promisify(execFile)(node, args, { cwd: root });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ImportFigures;
}

interface OpFigures {
  load: LoadResult;
  /** process → CPU ms per operation, the published events handled */
  cpuPerOp: Map<string, number>;
  hops: Histograms;
}

/** One op's load on `s` with the `others` paused, its CPU per process until its outbox is drained, and its histograms. */
async function loadAlone(s: System, paused: System[], op: Op): Promise<OpFigures> {
  const others = paused.flatMap((o) => [...o.processes().values()]);
  signalPids(others, 'SIGSTOP');
  const outbox = outboxWatch(s.databaseUrl);
  try {
    await httpLoad({ url: s.url, keys: s.keys, op, seconds: 2, connections: C }); // warm-up, unmeasured
    await until(outbox.empty, 'the warm-up events published', 120_000);
    const pids = s.processes();
    const cpu0 = new Map([...pids].map(([n, p]) => [n, pidCpuMs(p)]));
    const before = await scrape(s.metricsUrls);
    const load = await httpLoad({ url: s.url, keys: s.keys, op, seconds: SECONDS, connections: C });
    const hops = delta(await scrape(s.metricsUrls), before);
    await until(outbox.empty, 'the events published', 120_000);
    const cpuPerOp = new Map([...pids].map(([n, p]) => [n, (pidCpuMs(p) - cpu0.get(n)!) / load.requests]));
    return { load, cpuPerOp, hops };
  } finally {
    await outbox.end();
    signalPids(others, 'SIGCONT');
  }
}

/** a process's key in the snapshots: its system and name */
const key = (s: System, n: string) => `${s.mode}: ${n}`;
/** every process of `list` → its /metrics URL (metricsUrls are in processes()' order), keyed as the snapshots are */
const metricsOf = (list: System[]) => new Map(list.flatMap((s) => [...s.processes().keys()].map((n, i) => [key(s, n), s.metricsUrls[i]!] as const)));

const systems: System[] = [];
try {
  const builds: Build[] = [{ kind: 'source' }];
  if (values.bundled) {
    const t0 = performance.now();
    const files = await bundleProcesses(root, join(dir, 'bundles'), Object.keys(BUNDLE_ENTRIES));
    console.log(`[footprint] bundled ${files.size} processes with esbuild in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    builds.push({ kind: 'bundled', files });
  }
  for (const build of builds) systems.push(await single(build), await distributed(build));
  /** memory per process, keyed by system and process name */
  const snapshotOf = (list: System[]) => new Map(list.flatMap((s) => [...s.processes()].map(([n, p]) => [key(s, n), memory(p)] as const)));
  // idle: once every process has trimmed what start-up left (runtime/src/memory-trim.ts), as it idles from then on
  await trimmedOnce(metricsOf(systems));
  const idle = snapshotOf(systems);
  const idleLoad = loadavg()[0]!;
  const ops = new Map<System, Record<Op, OpFigures>>();
  const loaded = new Map<string, ReturnType<typeof memory>>();
  for (const s of systems) {
    const others = systems.filter((o) => o !== s);
    ops.set(s, { create: await loadAlone(s, others, 'create'), list: await loadAlone(s, others, 'list') });
    for (const [k, m] of snapshotOf([s])) loaded.set(k, m);
  }
  const loadedLoad = loadavg()[0]!;
  // then idle again, long enough for two of the trim's windows: a process that grew under the load
  // trims, one that did not (by less than the trim's margin) stays as it is
  await new Promise((r) => setTimeout(r, AFTER_LOAD_MS));
  const trimmed = snapshotOf(systems);

  // memory
  const memRows: (string | number)[][] = [];
  const total = (s: System, m: Map<string, ReturnType<typeof memory>>, f: 'rss' | 'pss' | 'peak') => [...s.processes().keys()].reduce((a, n) => a + m.get(key(s, n))![f], 0);
  for (const s of systems) {
    for (const n of s.processes().keys()) {
      const i = idle.get(key(s, n))!;
      const l = loaded.get(key(s, n))!;
      memRows.push([s.mode, n, i.rss, i.pss, l.rss, l.pss, l.peak, trimmed.get(key(s, n))!.rss, `${idleLoad.toFixed(2)} / ${loadedLoad.toFixed(2)}`]);
    }
    if (s.processes().size === 1) continue;
    // the six against the single process run the same way
    const one = systems.find((o) => o.build === s.build && o.processes().size === 1)!;
    memRows.push([s.mode, 'the six together', total(s, idle, 'rss'), total(s, idle, 'pss'), total(s, loaded, 'rss'), total(s, loaded, 'pss'), total(s, loaded, 'peak'), total(s, trimmed, 'rss'), '']);
    const ratio = (m: Map<string, ReturnType<typeof memory>>, f: 'rss' | 'pss' | 'peak') => (total(s, m, f) / total(one, m, f)).toFixed(2);
    memRows.push([s.mode, `× ${one.mode}`, ratio(idle, 'rss'), ratio(idle, 'pss'), ratio(loaded, 'rss'), ratio(loaded, 'pss'), ratio(loaded, 'peak'), ratio(trimmed, 'rss'), '']);
  }
  emitRows(
    `Resident memory (MB) per process: idle is once every process, ready, has trimmed what start-up left (its first idle window, services/runtime/src/memory-trim.ts: 10–20 s after ready); loaded is right after ${SECONDS} s of creates then ${SECONDS} s of lists (autocannon, ${C} connections, ${USERS} users; each after 2 s unmeasured), with the peak (VmHWM) over the whole run; trimmed is ${AFTER_LOAD_MS / 1000} s after the last load, every process idle (one that grew by the trim's margin since its last trim has trimmed again). PSS counts pages shared between processes (node's own code, mapped by every one) once across them. The services run with ${STANDALONE_NODE_FLAGS.join(' ')}, the single process without (as they ship)${values.bundled ? '; (bundled): the same processes from plain-JavaScript bundles esbuild built from the same source in this run (tools/build/bundle.ts)' : ''}`,
    ['mode', 'process', 'RSS idle', 'PSS idle', 'RSS loaded', 'PSS loaded', 'RSS peak', 'RSS trimmed after the load', 'load avg (idle / loaded)'],
    memRows,
  );

  // start time: restarts, then the import graphs alone
  const startRows: (string | number)[][] = [];
  const bare = await importGraph();
  startRows.push(['node alone (baseline: boot and the TypeScript stripper)', '–', bare.bootMs, 0, 0, bare.heapMb, bare.rssMb, loadavg()[0]!]);
  const entry = (s: System, n: string) => (s.build.kind === 'bundled' ? s.build.files.get(n)!.module : BUNDLE_ENTRIES[n]!.module);
  const whys: [string, ImportFigures][] = [];
  for (const s of systems) {
    for (const n of s.processes().keys()) {
      const ready: number[] = [];
      for (let i = 0; i < STARTS; i++) ready.push(await s.restart(n));
      const graphs: ImportFigures[] = [];
      for (let i = 0; i < STARTS; i++) graphs.push(await importGraph(entry(s, n)));
      const g = graphs.at(-1)!;
      startRows.push([`${s.mode}: ${n}`, median(ready), median(graphs.map((x) => x.bootMs)), median(graphs.map((x) => x.importMs)), g.modules, g.heapMb, g.rssMb, loadavg()[0]!]);
      if (values.why) whys.push([`${s.mode}: ${n}`, await importGraph(entry(s, n), true)]);
    }
  }
  emitRows(
    `Start time: spawn → ready (readiness probe answering 200) on a migrated database, median of ${STARTS} restarts; the import graph alone in a fresh node with the services' flags (tools/bench/lib/import-probe.ts importing the service's module, or tools/system.ts for the single process; bundled: the bundle's module.mjs): node's boot, the import (median of ${STARTS}), modules loaded (node: built-ins not counted; a bundle's chunks count one each), and the heap and resident memory it keeps after a full collection`,
    ['process', 'spawn → ready ms', 'node boot ms', 'import ms', 'modules', 'heap kept MB', 'RSS MB', 'load avg'],
    startRows,
  );
  if (values.why) {
    const typeRows: (string | number)[][] = [];
    const pkgRows: (string | number)[][] = [];
    const TYPES = ['string', 'code', 'closure', 'object', 'array', 'object shape', 'native', 'hidden'];
    for (const [name, g] of whys) {
      const h = g.why!.heap;
      typeRows.push([name, h.totalMb, ...TYPES.map((t) => h.byType[t] ?? 0)]);
      for (const p of h.byPackage.slice(0, 8)) pkgRows.push([name, p.name, g.why!.modulesByPackage[p.name] ?? 0, p.sourceMb, p.codeMb]);
    }
    emitRows(
      'Where the heap goes after the import (--why): a V8 heap snapshot after a full collection, self sizes (MB) by node type; "string" holds the source text V8 keeps of every loaded script, node\'s own built-ins among them (~7.8 MB, the TypeScript stripper amaro 3.8 MB of it: external strings in node\'s binary, outside "heap kept")',
      ['process', 'heap MB', ...TYPES],
      typeRows,
    );
    emitRows(
      'The 8 largest packages per process (--why): modules loaded at import, and what their scripts keep in the heap snapshot above: source text and functions (shared function info, bytecode, scope info, closures), MB; objects they allocated are in the by-type table. A bundle is one script for all its packages (read the source rows for the split)',
      ['process', 'package', 'modules', 'source MB', 'functions MB'],
      pkgRows,
    );
  }

  // per hop of a create, and CPU per operation per process
  const hopRows: (string | number)[][] = [];
  const perCreate = (s: System) => ops.get(s)!.create;
  const mean = (h: { sum: number; count: number } | undefined) => (h ? (h.sum / h.count) * 1000 : NaN);
  const httpOf = (f: OpFigures) => [...f.hops].find(([k]) => k.startsWith('tasksvc_http_request') && k.includes('route="/api/tasks"') && k.includes('method="POST"'))?.[1];
  for (const s of systems) {
    const f = perCreate(s);
    const creates = httpOf(f)?.count ?? f.load.requests;
    hopRows.push([s.mode, 'client: autocannon p50 (whole request)', '1', f.load.p50, `${f.load.reqPerSec.toFixed(0)} (${f.load.requests} answered)`, f.load.loadAverage]);
    hopRows.push([s.mode, 'gateway: HTTP request (histogram mean)', '1', mean(httpOf(f)), '', f.load.loadAverage]);
    const subjects = new Set([...f.hops.keys()].filter((k) => k.startsWith('tasksvc_bus_')).map((k) => /subject="([^"]+)"/.exec(k)![1]!));
    for (const subject of subjects) {
      const pick = (metric: string) => {
        const hs = [...f.hops].filter(([k]) => k.startsWith(metric) && k.includes(`subject="${subject}"`)).map(([, v]) => v);
        return hs.length ? { sum: hs.reduce((a, h) => a + h.sum, 0), count: hs.reduce((a, h) => a + h.count, 0) } : undefined;
      };
      const caller = pick('tasksvc_bus_request');
      const handler = pick('tasksvc_bus_handler');
      const n = (caller ?? handler)!.count / creates;
      if (n < 0.01) continue; // a probe or a timer, not the create's
      hopRows.push([s.mode, `bus ${subject}: caller (round trip)`, n.toFixed(2), mean(caller), '', f.load.loadAverage]);
      hopRows.push([s.mode, `bus ${subject}: handler (the service's work)`, n.toFixed(2), mean(handler), '', f.load.loadAverage]);
      if (caller && handler) hopRows.push([s.mode, `bus ${subject}: caller − handler (what the bus adds)`, n.toFixed(2), mean(caller) - mean(handler), '', f.load.loadAverage]);
    }
  }
  emitRows(
    `Per hop of a create (POST /api/tasks, ${SECONDS} s of autocannon, ${C} connections): mean ms from each process's own histograms (tasksvc_http_request_duration_seconds, tasksvc_bus_request_duration_seconds caller side, tasksvc_bus_handler_duration_seconds handler side) over the load, against the single process's in the same run (its bus is in-process: no encoding, no network)`,
    ['mode', 'hop', 'per create', 'mean ms', 'req/s', 'load avg'],
    hopRows,
  );
  const cpuRows: (string | number)[][] = [];
  for (const s of systems) {
    for (const n of s.processes().keys()) {
      cpuRows.push([s.mode, n, ops.get(s)!.create.cpuPerOp.get(n)! * 1000, ops.get(s)!.list.cpuPerOp.get(n)! * 1000, `${ops.get(s)!.create.load.loadAverage.toFixed(2)} / ${ops.get(s)!.list.load.loadAverage.toFixed(2)}`]);
    }
    const sum = (op: Op) => [...ops.get(s)![op].cpuPerOp.values()].reduce((a, b) => a + b, 0) * 1000;
    if (s.processes().size > 1) cpuRows.push([s.mode, 'the six together', sum('create'), sum('list'), '']);
  }
  emitRows(
    `CPU µs per operation per process (utime + stime from /proc over the load, until the events it published were handled), the other system paused; PostgreSQL not counted`,
    ['mode', 'process', 'CPU µs / create', 'CPU µs / list (50)', 'load avg (create / list)'],
    cpuRows,
  );
} finally {
  for (const s of systems) signalPids([...s.processes().values()], 'SIGCONT');
  for (const s of systems) await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
