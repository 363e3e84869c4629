/**
 * Systems under test that stay up for a whole bench and are measured in turn (http.ts, gc.ts): while
 * one is measured, every other is paused (SIGSTOP). Idle systems still wake for their timers (outbox
 * polls, health checks, heartbeats), and on two cores those wake-ups land inside the measured one's
 * latencies.
 */
import { createLogger, createPool, type Pool } from '@tasksvc/runtime';
import { until } from '../../testenv/wait.ts';
import { serving } from './servers.ts';

export type Op = 'create' | 'list';

export interface Target<R> {
  url: string;
  /** its processes, paused (SIGSTOP) while another target is measured */
  pids(): number[];
  /** whether what its last load left to do has been done (the events in its outbox published), so it is paused quiet */
  settled?(): Promise<boolean>;
  load(op: Op): Promise<R>;
  stop(): Promise<void>;
}

/** Pause or resume every process of a target (a process that has exited is skipped). */
export function signal(t: Target<unknown>, sig: 'SIGSTOP' | 'SIGCONT'): void {
  for (const pid of t.pids()) {
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
 * One target's load, measured with every other target paused. Resumed, it answers its health check
 * before the load; after it, it finishes what the load left it (publishing the events) and is paused again.
 */
export async function measureAlone<R>(t: Target<R>, op: Op): Promise<R> {
  signal(t, 'SIGCONT');
  await serving(t.url, t.url, 60_000);
  const r = await t.load(op);
  await pause(t);
  return r;
}

/** Resume every target (a paused process would not see its SIGTERM) and stop them. */
export async function stopAll(targets: Target<unknown>[]): Promise<void> {
  for (const t of targets) signal(t, 'SIGCONT');
  for (const t of targets) await t.stop();
}

const log = createLogger('bench', 'silent');

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
