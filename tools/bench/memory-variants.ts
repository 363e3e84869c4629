/**
 * Memory of the bundled services under variants of node flags and environment (issue 58, Memory):
 *
 *   node_modules/.bin/node tools/bench/memory-variants.ts [--seconds 8] [--idle 10] [--load] [--base DIR] NAME='FLAGS|ENV[|KIND]'…
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
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, createPool } from '@tasksvc/runtime';
import { CLUSTER_SERVICES, startCluster } from '../chaos/cluster.ts';
import { bundleProcesses } from '../build/bundle.ts';
import { httpLoad } from './http-load.ts';
import { apiKeys } from './lib/servers.ts';

const { values, positionals } = parseArgs({
  options: { base: { type: 'string' }, seconds: { type: 'string', default: '8' }, idle: { type: 'string', default: '10' }, load: { type: 'boolean', default: false }, ascii: { type: 'boolean', default: true } },
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
    const cluster = await startCluster({ LOG_LEVEL: 'silent', ...env }, { entries, nodeFlags: flags.split(/\s+/).filter(Boolean) });
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
        for (const op of ['create', 'list'] as const) {
          await httpLoad({ url: cluster.url, keys, op, seconds: 2, connections: 10 });
          const r = await httpLoad({ url: cluster.url, keys, op, seconds: Number(values.seconds), connections: 10 });
          rates.push(`${op} ${r.reqPerSec.toFixed(0)}/s p99 ${r.p99.toFixed(0)} ms${r.non2xx + r.errors ? ` (${r.non2xx} non-2xx, ${r.errors} errors)` : ''}`);
        }
        const l = loadavg()[0]!;
        for (const n of CLUSTER_SERVICES) {
          const m = memory(cluster.pid(n)!);
          if (n === 'tasks' || n === 'gateway') heaps.push(`${name} ${n} loaded: ${await heapOf(cluster.metricsUrl(n))}`);
          rows.push(`| ${name} | ${n} | loaded | ${m.rss.toFixed(1)} | ${m.pss.toFixed(1)} | ${threads(cluster.pid(n)!)} | peak ${m.peak.toFixed(1)}; ${rates.join(', ')} | ${l.toFixed(1)} |`);
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
