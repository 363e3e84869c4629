/**
 * The import graph of one module, alone in a fresh node (tools/bench/footprint.ts):
 *
 *   node --expose-gc [the services' flags] tools/bench/lib/import-probe.ts [--why] [MODULE]
 *
 * prints one JSON line: how long node took to reach this file (its own boot and the TypeScript
 * stripper's), how long MODULE's import took, how many modules it loaded (node: built-ins left
 * out), and the heap and resident memory they hold once collected. Without MODULE: node's boot
 * alone, the baseline. With --why, also the modules per package and a heap snapshot's summary
 * (lib/heap-summary.ts): what each package's code and source text keep, and the heap by V8's type.
 */
import { readFileSync, rmSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import type { HeapSummary } from './heap-summary.ts';

export interface ImportFigures {
  bootMs: number;
  importMs: number;
  modules: number;
  heapMb: number;
  rssMb: number;
  /** --why: modules loaded per package, and the heap snapshot's summary */
  why?: { modulesByPackage: Record<string, number>; heap: HeapSummary };
}

const urls: string[] = [];
registerHooks({
  load(url, context, next) {
    if (!url.startsWith('node:')) urls.push(url);
    return next(url, context);
  },
});
const bootMs = performance.now();
const why = process.argv.includes('--why');
const target = process.argv.slice(2).find((a) => a !== '--why');
if (target) await import(target);
const importMs = performance.now() - bootMs;
// what the graph keeps, not the garbage its evaluation left (two passes: weak references and finalizers)
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
gc();
gc();
const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const figures: ImportFigures = { bootMs, importMs, modules: urls.length, heapMb: process.memoryUsage().heapUsed / 1e6, rssMb: rssKb / 1e3 };
if (why) {
  // loaded only now: the figures above are the module's alone
  const { groupOf, summarizeHeapSnapshot } = await import('./heap-summary.ts');
  const modulesByPackage: Record<string, number> = {};
  for (const url of urls.slice(0, figures.modules)) modulesByPackage[groupOf(url)] = (modulesByPackage[groupOf(url)] ?? 0) + 1;
  const file = writeHeapSnapshot(join(tmpdir(), `import-probe-${process.pid}.heapsnapshot`));
  figures.why = { modulesByPackage, heap: summarizeHeapSnapshot(file) };
  rmSync(file);
}
console.log(JSON.stringify(figures));
// a module that opened a handle (a timer, a socket) must not keep this probe alive
process.exit(0);
