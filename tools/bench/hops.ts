/**
 * What each process of the distributed system pays per request (issue 58), read from /proc rather
 * than from timings, so that a busy shared machine moves it less: CPU (utime + stime, the kernel's
 * share of a socket write included), write and read system calls (/proc/PID/io syscw, syscr) and
 * voluntary context switches, per create and per list of 50, for the six service processes and
 * nats-server, over a window of autocannon load (10 connections, 500 users with an API key each;
 * 2 s unmeasured first) and 1.5 s after it for the events it caused. One tasks process against two:
 * replica-probe.ts.
 *
 *   node_modules/.bin/node tools/bench/hops.ts [--ops create,list] [--rounds 1] [--seconds 8] [--fill 60] [--base DIR] [--rate N]
 *
 * `--fill N`: creates first until the users hold N tasks each on average, so that a list reads full
 * pages of 50 (without it a list reads what the create rounds made: 8 s at ~1,000/s is ~16 a user).
 * `--base DIR`: a second cluster whose services run from another checkout (with its own
 * node_modules, e.g. a worktree of main) with that checkout's node flags and environment (as http.ts
 * `--other`: lib/checkout.ts), measured in the same rounds, the order alternating (A B, B A, …): a
 * change's before and after under the same load of the machine.
 * `--rate N`: the measured rounds at N requests/s (autocannon's overallRate) rather than as fast as
 * answered: CPU per request depends on the rate (how many requests share a write and a wake-up), so
 * two systems compared at the rate each reached on a busy machine differ by that too.
 *
 * Where the CPU goes inside a process: run the cluster with `--cpu-prof` (docs/benchmarks.md, "Per
 * request, hop by hop").
 */
import { parseArgs } from 'node:util';
import { createLogger, createPool } from '@tasksvc/runtime';
import { startCluster, type Cluster } from '../chaos/cluster.ts';
import { httpLoad } from './http-load.ts';
import { checkout, clusterFrom, type Checkout } from './lib/checkout.ts';
import { pidCpuMs, procWakes } from './lib/cpu.ts';
import { apiKeys } from './lib/servers.ts';
import { BENCH_PG_SETTINGS } from './lib/targets.ts';

const { values } = parseArgs({
  options: {
    ops: { type: 'string', default: 'create,list' },
    rounds: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '8' },
    fill: { type: 'string', default: '0' },
    base: { type: 'string' },
    rate: { type: 'string', default: '0' },
  },
});
const SECONDS = Number(values.seconds);
const NAMES = ['gateway', 'tasks', 'auth', 'notifier', 'webhook', 'scheduler'] as const;

const settle = () => new Promise((r) => setTimeout(r, 1_500));

function readProc(pid: number): { cpuMs: number; writes: number; reads: number; voluntary: number } {
  return { cpuMs: pidCpuMs(pid), ...procWakes(pid) };
}

/** A cluster measured in the rounds: this checkout's, or the services of `--base` DIR. */
interface Measured {
  label: string;
  cluster: Cluster;
  keys: string[];
}

async function measured(label: string, from?: Checkout): Promise<Measured> {
  const cluster = await startCluster({ LOG_LEVEL: 'silent', ...from?.env }, { pg: { settings: BENCH_PG_SETTINGS }, ...(from ? clusterFrom(from) : {}) });
  try {
    await cluster.ready(180_000);
    const pool = createPool(cluster.databaseUrl, createLogger('hops', 'silent'));
    const keys = await apiKeys(pool, 500);
    const perUser = Number(values.fill);
    const count = async () => Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks.tasks')).rows[0]!.n);
    while (perUser > 0 && (await count()) < perUser * keys.length) await httpLoad({ url: cluster.url, keys, op: 'create', seconds: 5, connections: 10 });
    await pool.end();
    return { label, cluster, keys };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

const systems: Measured[] = [];
try {
  systems.push(await measured('this checkout'));
  if (values.base) {
    const base = await checkout(values.base);
    systems.push(await measured(`base ${base.name}`, base));
  }

  for (const op of values.ops.split(',').filter(Boolean) as ('create' | 'list')[]) {
    for (let round = 1; round <= Number(values.rounds); round++) {
      // the order alternates, so neither side always follows the other's load
      for (const s of round % 2 === 1 ? systems : [...systems].reverse()) {
        const pids = (): [string, number][] => [...NAMES.map((n) => [n, s.cluster.pid(n)!] as [string, number]), ['nats-server', s.cluster.natsPid()!]];
        const snapshot = () => new Map(pids().map(([n, pid]) => [n, readProc(pid)]));
        await httpLoad({ url: s.cluster.url, keys: s.keys, op, seconds: 2, connections: 10 });
        const a = snapshot();
        const r = await httpLoad({ url: s.cluster.url, keys: s.keys, op, seconds: SECONDS, connections: 10, rate: Number(values.rate) });
        await settle();
        const b = snapshot();
        const n = r.requests;
        const which = systems.length > 1 ? `, ${s.label}` : '';
        console.log(`${op} (round ${round}${which}): ${r.reqPerSec.toFixed(0)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(1)} ms, load average ${r.loadAverage}`);
        for (const [name, x] of a) {
          const y = b.get(name)!;
          const per = (k: 'writes' | 'reads' | 'voluntary') => ((y[k] - x[k]) / n).toFixed(2);
          console.log(`  ${name.padEnd(11)} CPU µs ${(((y.cpuMs - x.cpuMs) * 1000) / n).toFixed(0).padStart(5)}   writes ${per('writes')}   reads ${per('reads')}   voluntary switches ${per('voluntary')}`);
        }
      }
    }
  }
} finally {
  for (const s of systems) await s.cluster.stop();
}
process.exit(0);
