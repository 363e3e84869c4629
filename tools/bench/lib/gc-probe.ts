/**
 * Loaded into each server process by tools/bench/gc.ts (NODE_OPTIONS=--import, before the entry point).
 * On SIGUSR2 it writes what it saw since the last signal to GC_PROBE_FILE (the collector's pauses from
 * perf_hooks 'gc' entries, the event loop's delay, resident memory) and starts counting afresh.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

export interface ProbeFigures {
  /** one more per signal, so the reader can tell a fresh file from the previous one */
  seq: number;
  gcCount: number;
  gcMs: number;
  gcP50Ms: number;
  gcMaxMs: number;
  delayP99Ms: number;
  rssMb: number;
}

// `%p` in the name: this process's pid (several service processes share one setting)
const file = process.env.GC_PROBE_FILE?.replace('%p', String(process.pid));
if (file) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let pauses: number[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push(e.duration);
  }).observe({ entryTypes: ['gc'] });
  let seq = 0;
  process.on('SIGUSR2', () => {
    const sorted = pauses.sort((a, b) => a - b);
    const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : 0);
    const figures: ProbeFigures = {
      seq: ++seq,
      gcCount: sorted.length,
      gcMs: sorted.reduce((a, b) => a + b, 0),
      gcP50Ms: at(0.5),
      gcMaxMs: at(1),
      delayP99Ms: delay.percentile(99) / 1e6,
      rssMb: process.memoryUsage().rss / 1e6,
    };
    writeFileSync(file, JSON.stringify(figures));
    pauses = [];
    delay.reset();
  });
}
