/**
 * Memory of the bundled services under variants of node flags and environment (issue 58, Memory):
 *
 *   node_modules/.bin/node tools/bench/memory-variants.ts [--seconds 8] [--idle 10] [--load] [--after N] [--bare] [--snapshot] [--base DIR] NAME='FLAGS|ENV[|KIND]'…
 *
 * e.g. `base='--max-semi-space-size=16|' arena='--max-semi-space-size=16|MALLOC_ARENA_MAX=2'`
 * (FLAGS space-separated node flags; ENV space-separated KEY=VALUE; KIND `no-defer`: bundles built without
 * tools/build/bundle.ts's deferredRequires, `base`: bundled from the checkout --base DIR (with its own
 * node_modules, e.g. a worktree of main) by that checkout's own bundle.ts, so a change to the source or
 * the bundler is measured in the same run). The six services are bundled once
 * per kind (tools/build/bundle.ts); each variant then runs them as a cluster of its own (tools/chaos/cluster.ts,
 * with STANDALONE_ENV unless the variant sets those variables),
 * one variant at a time: VmRSS and Pss of each process `--idle` s after all are ready, and with --load
 * after `--seconds` of creates then of lists through the gateway (10 connections, 100 users), with
 * req/s of each (CPU timings on a shared machine are noisy; memory less so). Prints a markdown table.
 * --after N: once more N s after the load (does what the load grew come back?). --bare: first a node
 * running an empty module with the variant's flags and environment (what node itself holds: the
 * baseline each service adds to). --snapshot: then a heap snapshot of tasks and the gateway
 * (--heapsnapshot-signal; it collects first, so it shows what is alive): V8 types and the largest
 * groups by constructor (lib/heap-summary.ts). CPU µs per request of each process beside the loaded rows.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, createPool, STANDALONE_ENV } from '@tasksvc/runtime';
import { CLUSTER_SERVICES, startCluster } from '../chaos/cluster.ts';
import { bundleProcesses } from '../build/bundle.ts';
import { httpLoad } from './http-load.ts';
import { apiKeys } from './lib/servers.ts';
import { summarizeHeapSnapshot } from './lib/heap-summary.ts';
import { pidCpuMs } from './lib/cpu.ts';
import { outboxWatch } from './lib/targets.ts';
import { until } from '../testenv/wait.ts';

const { values, positionals } = parseArgs({
  options: { base: { type: 'string' }, seconds: { type: 'string', default: '8' }, idle: { type: 'string', default: '10' }, load: { type: 'boolean', default: false }, ascii: { type: 'boolean', default: true }, after: { type: 'string', default: '0' }, bare: { type: 'boolean', default: false }, snapshot: { type: 'boolean', default: false } },
  allowNegative: true,
  allowPositionals: true,
});
const root = new URL('../..', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'mem-variants-'));
const log = createLogger('bench', 'silent');

function memory(pid: number): { rss: number; pss: number; peak: number } {
  const kb = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) / 1e3;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: kb(status, 'VmRSS'), peak: kb(status, 'VmHWM'), pss: kb(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'), 'Pss') };
}
/** V8's heap spaces (physical MB... as prom-client reports total size) and external memory, from a process's /metrics. */
async function heapOf(url: string): Promise<string> {
  const text = await (await fetch(url)).text();
  const mb = (v: string) => (Number(v) / 1e6).toFixed(1);
  const spaces = [...text.matchAll(/^nodejs_heap_space_size_(total|used)_bytes\{space="([^"]+)"\} (\S+)$/gm)].filter((m) => Number(m[3]) > 5e5).map((m) => `${m[2]} ${m[1]} ${mb(m[3]!)}`);
  const ext = /^nodejs_external_memory_bytes (\S+)$/m.exec(text)?.[1];
  return `${spaces.join(', ')}; external ${ext ? mb(ext) : '?'}`;
}
const heaps: string[] = [];
const threads = (pid: number) => Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));

/** node with `flags` and `env` running an empty module that stays alive: VmRSS/Pss after --idle s. */
async function bareNode(flags: string[], env: Record<string, string>) {
  const file = join(dir, 'bare.mjs');
  writeFileSync(file, 'setInterval(() => {}, 1 << 30);\n');
  const child = spawn(join(root, 'node_modules', '.bin', 'node'), [...flags, file], { env: { PATH: process.env.PATH ?? '', ...STANDALONE_ENV, ...env }, stdio: 'ignore' });
  try {
    await sleep(Number(values.idle));
    return { ...memory(child.pid!), threads: threads(child.pid!) };
  } finally {
    child.kill('SIGKILL');
  }
}

/** A heap snapshot of `pid` (started with --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=snapDir), summarized. */
async function snapshotOf(pid: number, snapDir: string, metricsUrl: string) {
  const before = new Set(readdirSync(snapDir));
  process.kill(pid, 'SIGUSR2');
  // the snapshot is written on the main thread: the process answers again once the file is complete
  let file: string | undefined;
  for (let i = 0; i < 600 && !file; i++) {
    await sleep(0.2);
    file = readdirSync(snapDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
  }
  if (!file) throw new Error(`no heap snapshot from ${pid}`);
  await (await fetch(metricsUrl)).text();
  const summary = summarizeHeapSnapshot(join(snapDir, file));
  rmSync(join(snapDir, file));
  return summary;
}

try {
  const bundles = new Map<string, Record<string, string>>();
  const entriesFor = async (kind: string) => {
    if (kind !== '' && kind !== 'no-defer' && kind !== 'base') throw new Error(`unknown bundle kind ${kind}`);
    if (kind === 'base' && !values.base) throw new Error('the kind base needs --base DIR');
    if (!bundles.has(kind)) {
      const base = `${values.base?.replace(/\/$/, '')}/`;
      const bundler = kind === 'base' ? ((await import(join(base, 'tools/build/bundle.ts'))) as { bundleProcesses: typeof bundleProcesses }).bundleProcesses : bundleProcesses;
      const files = await bundler(kind === 'base' ? base : root, join(dir, `bundles${kind}`), [...CLUSTER_SERVICES], { ascii: values.ascii, defer: kind !== 'no-defer' });
      bundles.set(kind, Object.fromEntries(CLUSTER_SERVICES.map((n) => [n, files.get(n)!.main])));
    }
    return bundles.get(kind)!;
  };
  const rows: string[] = [];
  for (const v of positionals) {
    const [name, spec] = v.split(/=(.*)/s) as [string, string];
    const [flags = '', envText = '', kind = ''] = spec.split('|');
    const entries = await entriesFor(kind);
    const env = Object.fromEntries(envText.split(/\s+/).filter(Boolean).map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]));
    const nodeFlags = flags.split(/\s+/).filter(Boolean);
    if (values.bare) {
      const b = await bareNode(nodeFlags, env);
      rows.push(`| ${name} | node alone (empty module) | idle | ${b.rss.toFixed(1)} | ${b.pss.toFixed(1)} | ${b.threads} | | ${loadavg()[0]!.toFixed(1)} |`);
    }
    const snapDir = join(dir, `snapshots-${name}`);
    if (values.snapshot) mkdirSync(snapDir);
    const clusterFlags = values.snapshot ? [...nodeFlags, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapDir}`] : nodeFlags;
    const cluster = await startCluster({ LOG_LEVEL: 'silent', ...env }, { entries, nodeFlags: clusterFlags });
    try {
      await cluster.ready(180_000);
      await new Promise((r) => setTimeout(r, Number(values.idle) * 1000));
      const idle = new Map(CLUSTER_SERVICES.map((n) => [n, memory(cluster.pid(n)!)]));
      const idleLoad = loadavg()[0]!;
      for (const n of CLUSTER_SERVICES) rows.push(`| ${name} | ${n} | idle | ${idle.get(n)!.rss.toFixed(1)} | ${idle.get(n)!.pss.toFixed(1)} | ${threads(cluster.pid(n)!)} | | ${idleLoad.toFixed(1)} |`);
      if (values.load) {
        const pool = createPool(cluster.databaseUrl, log);
        const keys = await apiKeys(pool, 100);
        await pool.end();
        const rates: string[] = [];
        const outbox = outboxWatch(cluster.databaseUrl);
        /** CPU µs per request of the measured load, per process and op (the events it published handled first) */
        const cpu = new Map<string, string[]>();
        for (const op of ['create', 'list'] as const) {
          await httpLoad({ url: cluster.url, keys, op, seconds: 2, connections: 10 });
          await until(outbox.empty, 'the warm-up events published', 120_000);
          const cpu0 = new Map(CLUSTER_SERVICES.map((n) => [n, pidCpuMs(cluster.pid(n)!)]));
          const r = await httpLoad({ url: cluster.url, keys, op, seconds: Number(values.seconds), connections: 10 });
          await until(outbox.empty, 'the events published', 120_000);
          for (const n of CLUSTER_SERVICES) cpu.set(n, [...(cpu.get(n) ?? []), `${op} ${(((pidCpuMs(cluster.pid(n)!) - cpu0.get(n)!) / r.requests) * 1000).toFixed(0)}`]);
          rates.push(`${op} ${r.reqPerSec.toFixed(0)}/s p99 ${r.p99.toFixed(0)} ms${r.non2xx + r.errors ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : ''}`);
        }
        await outbox.end();
        const l = loadavg()[0]!;
        for (const n of CLUSTER_SERVICES) {
          const m = memory(cluster.pid(n)!);
          if (n === 'tasks' || n === 'gateway') heaps.push(`${name} ${n} loaded: ${await heapOf(cluster.metricsUrl(n))}`);
          rows.push(`| ${name} | ${n} | loaded | ${m.rss.toFixed(1)} | ${m.pss.toFixed(1)} | ${threads(cluster.pid(n)!)} | peak ${m.peak.toFixed(1)}; CPU µs/request ${cpu.get(n)!.join(', ')}; ${rates.join(', ')} | ${l.toFixed(1)} |`);
        }
        if (Number(values.after) > 0) {
          await sleep(Number(values.after));
          const la = loadavg()[0]!;
          for (const n of CLUSTER_SERVICES) {
            const m = memory(cluster.pid(n)!);
            if (n === 'tasks' || n === 'gateway') heaps.push(`${name} ${n} ${values.after} s after the load: ${await heapOf(cluster.metricsUrl(n))}`);
            rows.push(`| ${name} | ${n} | ${values.after} s after the load | ${m.rss.toFixed(1)} | ${m.pss.toFixed(1)} | ${threads(cluster.pid(n)!)} | | ${la.toFixed(1)} |`);
          }
        }
      }
      if (values.snapshot) {
        for (const n of ['tasks', 'gateway'] as const) {
          const h = await snapshotOf(cluster.pid(n)!, snapDir, cluster.metricsUrl(n));
          const types = Object.entries(h.byType).sort((a, b) => b[1] - a[1]).slice(0, 8).map(([t, mb]) => `${t} ${mb.toFixed(2)}`).join(', ');
          heaps.push(`${name} ${n} heap snapshot (${values.load ? 'after the load' : 'idle'}): ${h.totalMb.toFixed(1)} MB; by type: ${types}`);
          for (const g of h.byName.slice(0, 15)) heaps.push(`    ${g.mb.toFixed(2)} MB  ${g.count}x  ${g.type} ${g.name}`);
        }
      }
    } finally {
      await cluster.stop();
    }
    console.error(`[memory-variants] ${name} done`);
  }
  for (const h of heaps) console.log(h);
  console.log(['| variant | process | when | RSS MB | PSS MB | threads | notes | load avg |', '|---|---|---|---|---|---|---|---|', ...rows].join('\n'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
