/**
 * The import graph of one module, alone in a fresh node (tools/bench/footprint.ts):
 *
 *   node --expose-gc [the services' flags] tools/bench/lib/import-probe.ts [MODULE]
 *
 * prints one JSON line: how long node took to reach this file (its own boot and the TypeScript
 * stripper's), how long MODULE's import took, how many modules it loaded (node: built-ins left
 * out), and the heap and resident memory they hold once collected. Without MODULE: node's boot
 * alone, the baseline.
 */
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

export interface ImportFigures {
  bootMs: number;
  importMs: number;
  modules: number;
  heapMb: number;
  rssMb: number;
}

let modules = 0;
registerHooks({
  load(url, context, next) {
    if (!url.startsWith('node:')) modules++;
    return next(url, context);
  },
});
const bootMs = performance.now();
const target = process.argv[2];
if (target) await import(target);
const importMs = performance.now() - bootMs;
// what the graph keeps, not the garbage its evaluation left (two passes: weak references and finalizers)
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
gc();
gc();
const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const figures: ImportFigures = { bootMs, importMs, modules, heapMb: process.memoryUsage().heapUsed / 1e6, rssMb: rssKb / 1e3 };
console.log(JSON.stringify(figures));
// a module that opened a handle (a timer, a socket) must not keep this probe alive
process.exit(0);
