import { setFlagsFromString } from 'node:v8';

/** The V8 flag tuneGarbageCollection turns off, as a command line names it. */
export const PRETENURING_FLAG = '--allocation-site-pretenuring';

/**
 * Turn off V8's allocation-site pretenuring for this process, unless its node command line names
 * the flag itself (`--allocation-site-pretenuring` keeps V8's default: tools/bench/gc.ts compares).
 * Called first thing by every entry point (runStandalone, npm start).
 *
 * Why: V8 allocates every object of an allocation site straight into the old generation once it saw
 * nearly all of the site's recent objects survive a scavenge. A service hits that in bursts (a
 * query's rows all alive together, start-up work), and the sites so marked are the ones every
 * request uses afterwards: pg's row objects, per-request records. Their objects then die in the old
 * generation, which grew by ~1.5 MB per scavenge under create load (~0.3 MB with it off), so major
 * collections come far more often and scavenges took 3–4 ms instead of 1–1.5 (`--trace-gc`). Under
 * list load the single process then collects for a half to a quarter of the time and holds a third
 * less memory; its creates cost ~15 % more CPU without it, which the gc bench shows each run
 * (docs/benchmarks.md, gc).
 */
export function tuneGarbageCollection(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => a === PRETENURING_FLAG || a === `--no-${PRETENURING_FLAG.slice(2)}`)) return false;
  setFlagsFromString(`--no-${PRETENURING_FLAG.slice(2)}`);
  return true;
}

/**
 * The node flags a service started alone (its own process on NATS: the Dockerfile's CMDs, the test
 * cluster) runs with; they must be given at start, V8 sizes its heap before any code runs.
 *
 * A 16 MB semi-space (V8 picks 64 MB here): a service alone keeps a small old generation and
 * receives its work as NATS frames. With the large young generation the gateway under list load
 * collected young objects about once a second, while the ArrayBuffers of the replies it passed on
 * (~65 MB/s) outlived those collections and were freed only by full ones, which then ran every
 * 0.2–0.4 s, each with a concurrent marking thread taking the second core (seen in 4 of 7 runs;
 * none in 5 runs with this flag). The single process keeps V8's default: its young generation fills
 * several times a second and no such storm was seen (tools/bench/gc.ts measures both).
 */
export const STANDALONE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];
