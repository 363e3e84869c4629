import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from './logger.ts';
import { counter } from './metrics.ts';

/**
 * Gives memory back to the system once a process idles after it grew (issue 58, Memory).
 *
 * Why: V8 keeps the pages a burst of work made it commit. After start-up or a load its heap holds
 * 20–28 MB alive, yet the young generation stays committed at its grown size and freed old-generation
 * pages stay mapped, so a service idles at ~95–140 MB RSS. An ordinary full collection frees the
 * objects but keeps the pages (RSS unchanged); V8's last-resort collection, what it runs on a
 * low-memory notification, also shrinks the young generation and unmaps what is free. V8's own
 * memory reducer does that only minutes after start and not again after a load. Measured in
 * docs/benchmarks.md ("Trimming an idle process").
 *
 * The policy: every `everyMs` the process looks at its CPU over the window just gone; below
 * `idleShare` of a core it counts as idle, and if its RSS has grown by more than `growthBytes` since
 * the last trim (or it never trimmed: start-up's garbage) it trims once. A trim is one synchronous
 * collection of the live heap (each one's time is in the debug log; `npm start`'s process from source
 * with a 190 MB heap took 153 ms), paid only while nothing else is going on; an idle process that
 * does not grow never trims again. It also flushes bytecode that is not running, so the first requests
 * after it compile again: the price of the memory, paid once per idle spell.
 */
export interface TrimPolicy {
  everyMs: number;
  idleShare: number;
  growthBytes: number;
}
export const TRIM_POLICY: TrimPolicy = { everyMs: 10_000, idleShare: 0.02, growthBytes: 8e6 };

/** One window's readings: CPU and wall time over it, RSS now and right after the last trim (0: none yet). */
export interface TrimWindow {
  cpuMs: number;
  wallMs: number;
  rss: number;
  rssAfterLastTrim: number;
}

/** Whether a window calls for a trim: the process idled through it and has grown since its last trim. */
export function shouldTrim(w: TrimWindow, policy: TrimPolicy = TRIM_POLICY): boolean {
  return w.wallMs > 0 && w.cpuMs / w.wallMs < policy.idleShare && w.rss - w.rssAfterLastTrim > policy.growthBytes;
}

const trims = counter('tasksvc_memory_trims_total', 'Idle trims: last-resort collections that gave the memory a burst of work left committed back to the system', []);

let fullGc: ((options: object) => void) | undefined;
export interface Trim {
  rssBefore: number;
  rssAfter: number;
  heapBefore: number;
  heapAfter: number;
  ms: number;
}
/** Collect everything collectable and hand free pages back (V8's last-resort collection). */
export function trimMemory(): Trim {
  // `gc` with V8's options exists only with --expose-gc; set now, the flag exposes it to a new context
  if (!fullGc) {
    setFlagsFromString('--expose-gc');
    fullGc = runInNewContext('gc') as (options: object) => void;
  }
  const rssBefore = process.memoryUsage.rss();
  const heapBefore = getHeapStatistics().total_heap_size;
  const t0 = performance.now();
  fullGc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const ms = performance.now() - t0;
  trims.inc();
  return { rssBefore, rssAfter: process.memoryUsage.rss(), heapBefore, heapAfter: getHeapStatistics().total_heap_size, ms };
}

/**
 * Start looking for idle windows to trim in (a process that serves: the services once ready, the
 * single process). The timer does not keep the process alive; the returned function stops it.
 */
export function startMemoryTrim(log: Logger, policy: TrimPolicy = TRIM_POLICY, onTrim?: (t: Trim) => void): () => void {
  let rssAfterLastTrim = 0;
  let cpu = process.cpuUsage();
  let at = performance.now();
  const timer = setInterval(() => {
    const used = process.cpuUsage(cpu);
    const now = performance.now();
    const window: TrimWindow = { cpuMs: (used.user + used.system) / 1000, wallMs: now - at, rss: process.memoryUsage.rss(), rssAfterLastTrim };
    if (shouldTrim(window, policy)) {
      const t = trimMemory();
      rssAfterLastTrim = t.rssAfter;
      const mb = (b: number) => Math.round(b / 1e5) / 10;
      log.debug({ rssMb: [mb(t.rssBefore), mb(t.rssAfter)], heapMb: [mb(t.heapBefore), mb(t.heapAfter)], ms: Math.round(t.ms) }, 'idle: memory trimmed');
      onTrim?.(t);
    }
    // the trim's own CPU is not the next window's
    cpu = process.cpuUsage();
    at = performance.now();
  }, policy.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
