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
 * An 8 MB semi-space (V8 picks 64 MB here): a service alone keeps a small old generation and
 * receives its work as NATS frames. With the large young generation the gateway under list load
 * collected young objects about once a second, while the ArrayBuffers of the replies it passed on
 * (~65 MB/s) outlived those collections and were freed only by full ones, which then ran every
 * 0.2–0.4 s, each with a concurrent marking thread taking the second core (seen in 4 of 7 runs;
 * none in 5 runs with 16). The single process keeps V8's default: its young generation fills
 * several times a second and no such storm was seen (tools/bench/gc.ts measures both).
 * 16 -> 8 (issue 58): the young generation a service has grown under load stays committed while it
 * idles (two semi-spaces: 33.6 MB with 16, 16.8 with 8), and after the load only 25-28 MB of the
 * heap are alive. Bundled, the images' flags otherwise (tools/bench/memory-variants.ts --load,
 * 2026-12-07 10:07-10:28 UTC, load 7-18, 16 and 8 interleaved): after the load tasks 144.9-157.7 ->
 * 132.1-141.2 MB, the gateway 140.5-147.5 -> 128.8-130.7, idle and the other four alike; CPU per
 * request of tasks and the gateway within the runs' noise (medians: tasks create 222 -> 218 us,
 * list 761 -> 804; gateway create 188 -> 188, list 461 -> 463), while the six spend 10-36 % more
 * time collecting (gc.ts, two runs: GC ms per 10 s of creates 401, 355 -> 547, 480, of lists 1,190,
 * 1,343 -> 1,504, 1,480) at the same CPU per request and rates, with no storm. 4 MB cut further (tasks 127, gateway 118) but collected 55-63 % more than 16, at fewer
 * lists per second.
 *
 * A 384 MB cap on the old generation (V8 sizes it from the machine's memory: 4,144 MB here, and
 * grows it generously below that): under the bench's create and list load the tasks service's old
 * generation held 66–85 MB, of which 16–21 MB were alive once the cap made V8 collect it (its
 * heap-growing factor follows the cap); RSS after the load tasks 218–235 -> 151–160 MB (64, 96, 128,
 * 256 and 384 all gave about the same; an interleaved A/B at load 4–5: 221, 218 -> 160, 160), the
 * gateway less clearly (172–202 -> 143–174; in the A/B 179, 173 -> 174, 174, its peak 220, 188 ->
 * 175, 174); idle RSS and req/s the same within the shared machine's noise (A/B creates 2444, 2291 ->
 * 2483, 1975/s; lists 996, 944 -> 1095, 824/s). 384 leaves a large account's import (at most 16 MiB) and export
 * their room, and a heap past it would not fit the pods' default 512Mi limit anyway.
 */
export const STANDALONE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--max-old-space-size=384'];

/**
 * The environment a service started alone runs with besides its own variables (the Dockerfile's
 * runtime ENV, the test cluster; tools/k8s/dockerfile.test.ts keeps them equal). Read by glibc, not
 * by the service (so not in proto/src/service-env.ts).
 *
 * MALLOC_ARENA_MAX=2: glibc gives each thread that calls malloc an arena of its own (up to 8 per
 * core), and node has 11 threads (V8's platform workers, libuv's pool, the inspector's); memory freed
 * in one arena is not reused by another. Measured on the six bundled services (tools/bench/memory-variants.ts,
 * 2-core machine, load 7-11): idle RSS 1-5 MB less each (tasks 110.1 -> 108.1, gateway 126.2 -> 121.0,
 * notifier 112.7 -> 108.8), after the create and list load tasks 233.9 -> 228.2 and 234.7 -> 225.7 in
 * two runs; req/s within the runs' noise (the machine was shared).
 */
export const STANDALONE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
