/**
 * Systems under test that stay up for a whole bench and are measured in turn (http.ts, gc.ts): while
 * one is measured, every other is paused (SIGSTOP). Idle systems still wake for their timers (outbox
 * polls, health checks, heartbeats), and on two cores those wake-ups land inside the measured one's
 * latencies.
 */
import { createLogger, createPool, type LocalPostgresOptions, type Pool } from '@tasksvc/runtime';
import { until } from '../../testenv/wait.ts';
import { serving } from './servers.ts';

const log = createLogger('bench', 'silent');

export type Op = 'create' | 'list';

export interface Target<R> {
  url: string;
  /** its database: vacuumed and analysed before each phase (runRounds) */
  databaseUrl: string;
  /** its processes, paused (SIGSTOP) while another target is measured */
  pids(): number[];
  /** whether what its last load left to do has been done (the events in its outbox published), so it is paused quiet */
  settled?(): Promise<boolean>;
  /** `seconds` of the load: a measurement's, or the warm-up's before it (its figures are dropped) */
  load(op: Op, seconds: number): Promise<R>;
  stop(): Promise<void>;
}

/** Pause or resume every process of a target (a process that has exited is skipped). */
function signal(t: Target<unknown>, sig: 'SIGSTOP' | 'SIGCONT'): void {
  signalPids(t.pids(), sig);
}

/** Pause or resume these processes (one that has exited is skipped). */
export function signalPids(pids: number[], sig: 'SIGSTOP' | 'SIGCONT'): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/** Pause a target once it has done what its last load left it. */
export async function pause(t: Target<unknown>): Promise<void> {
  if (t.settled) await until(() => t.settled!(), `${t.url}: its outbox published`, 120_000);
  signal(t, 'SIGSTOP');
}

/**
 * Seconds of the same load, unmeasured, before each measurement. A target resumes from a pause as
 * long as every other target's turn (about a minute with six), which no server under steady load
 * has: its idle database connections have been closed (after 30 s) and every API key's cached
 * identity has expired (60 s), all at once, so the first second of a measurement would reconnect and
 * look up all 500 keys again. The more targets a bench runs, the longer the pauses: in http.ts with
 * six targets (2 rounds, 2026-12-05) the distributed create measured 0.40× the baseline with a p99
 * of 3.9× without the warm-up, and 0.56× with 2.1× with it.
 */
export const WARM_UP_SECONDS = 2;

/**
 * One target's load, measured with every other target paused. Resumed, it answers its health check
 * and takes the warm-up load before the measured one; after it, it finishes what the load left it
 * (publishing the events) and is paused again.
 */
async function measureAlone<R>(t: Target<R>, op: Op, seconds: number): Promise<R> {
  signal(t, 'SIGCONT');
  await serving(t.url, t.url, 60_000);
  await t.load(op, WARM_UP_SECONDS);
  const r = await t.load(op, seconds);
  await pause(t);
  return r;
}

/**
 * The rounds of a bench: in each, the creates of every target in turn, then the lists (each round
 * starting one target later, so drift in the machine or in PostgreSQL falls on all alike). Before
 * each phase every database is vacuumed and analysed: the lists then read tables with current
 * statistics (as autovacuum keeps them in production, and as the plans are chosen), and each
 * target's own maintenance is done between the phases. The bench's PostgreSQL servers run with
 * autovacuum off (BENCH_PG_SETTINGS): left on, the work one target's writes caused ran during the
 * next target's measurement, on a server they share.
 */
export async function runRounds<T extends Target<unknown>>(
  targets: T[],
  o: { rounds: number; /** of each measurement */ seconds: number; onRound?: (round: number) => void },
): Promise<Map<T, Record<Op, Result<T>[]>>> {
  const runs = new Map(targets.map((t) => [t, { create: [] as Result<T>[], list: [] as Result<T>[] }]));
  for (let round = 0; round < o.rounds; round++) {
    for (const op of ['create', 'list'] as const) {
      await Promise.all(targets.map((t) => vacuum(t.databaseUrl)));
      for (let i = 0; i < targets.length; i++) {
        const t = targets[(i + round) % targets.length]!;
        runs.get(t)![op].push((await measureAlone(t, op, o.seconds)) as Result<T>);
      }
    }
    o.onRound?.(round);
  }
  return runs;
}

/** What a target's load gives. */
type Result<T extends Target<unknown>> = Awaited<ReturnType<T['load']>>;

/** Settings of every PostgreSQL server a bench starts (see runRounds). */
export const BENCH_PG_SETTINGS = ['autovacuum=off'];

/**
 * PostgreSQL as distributions and the official images ship it (the benches' `--pg defaults`): the
 * system's server, JIT on, fsync and autovacuum on. The embedded build has no JIT, so a plan the JIT
 * compiles (issue 61) shows only here.
 */
export const DISTRIBUTION_PG: Partial<Pick<LocalPostgresOptions, 'binaries' | 'durable' | 'settings'>> = { binaries: 'system', durable: true, settings: ['jit=on'] };

async function vacuum(url: string): Promise<void> {
  const pool = createPool(url, log, { max: 1 });
  try {
    await pool.query('VACUUM (ANALYZE)');
  } finally {
    await pool.end();
  }
}

/** Resume every target (a paused process would not see its SIGTERM) and stop them. */
export async function stopAll(targets: Target<unknown>[]): Promise<void> {
  for (const t of targets) signal(t, 'SIGCONT');
  for (const t of targets) await t.stop();
}

/**
 * Whether no event of the tasks service waits in the outbox of the database at `url`, on one
 * connection kept for the target's life (`end` closes it).
 */
export function outboxWatch(url: string): { empty: () => Promise<boolean>; end: () => Promise<void> } {
  let pool: Pool | undefined;
  return {
    empty: async () => {
      pool ??= createPool(url, log, { max: 1 });
      const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks.outbox WHERE published_at IS NULL');
      return rows[0]!.n === 0;
    },
    end: async () => {
      await pool?.end();
    },
  };
}
