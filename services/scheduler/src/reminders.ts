import { checkRemindersRpc, MAX_REMINDER_CHECK, notificationRequested, REMINDER_ARMED_SUBJECT, reminderArmed, REMINDERS_MARK, TASK_EVENTS_FILTER, taskEvents, type NotificationRequest } from '@tasksvc/proto';
import { inTransaction, wakeTimer, type Bus, type Logger, type OutboxRelay, type Pool, type Subscription } from '@tasksvc/runtime';
import { applySchedule, claimDue, finishClaimed, nextReminderAt, pruneHandled, type Handled } from './db/reminders.ts';
import { reminderMetrics } from './metrics.ts';

/** The scheduler's durable consumer of task events: it keeps the reminders' due-queue. */
export const REMINDER_CONSUMER = 'scheduler-reminders';

/** Reminders claimed per transaction (and asked of the tasks service at once). */
export const CLAIM_BATCH = 500;
/** The timer never sleeps longer than this: a missed re-arm broadcast costs at most this much delay. */
export const MAX_SLEEP_MS = 30_000;
/** After a failed round (the tasks service or the database away), try again after this long. */
const RETRY_MS = 5_000;
const CHECK_TIMEOUT_MS = 30_000;
/** Due rows that another replica holds are looked at again after this long. */
const BUSY_ELSEWHERE_MS = 1_000;

export interface ReminderDeps {
  pool: Pool;
  bus: Bus;
  log: Logger;
  relay: OutboxRelay;
}

/**
 * Task events whose envelope carries a reminder schedule update the queue; the replicas hear of a
 * reminder earlier than the one they wait for. Events without one (most) are acked unread by the bus
 * (their publisher marks the others, REMINDERS_MARK); those of a publisher of an older release, which
 * marks nothing, are read and skipped here.
 */
export async function consumeReminderSchedules(deps: ReminderDeps): Promise<Subscription> {
  return deps.bus.consume(
    taskEvents['task.created'],
    async (msg) => {
      if (!msg.reminders) return;
      const earliest = await applySchedule(deps.pool, msg.payload.task.id, msg.userId, msg.reminders);
      if (earliest) deps.bus.broadcast(REMINDER_ARMED_SUBJECT, { at: earliest.toISOString() });
    },
    { durable: REMINDER_CONSUMER, filter: TASK_EVENTS_FILTER, ackWaitMs: 30_000, concurrency: 16, marked: REMINDERS_MARK },
  );
}

/** The notification request of a reminder that goes out. */
function request(userId: string, taskId: string, key: string, fireAt: Date, v: { title: string; body: string; url: string | null; actions: NotificationRequest['actions'] }): NotificationRequest {
  return { userId, title: v.title, body: v.body, url: v.url, tag: 'reminder', dedupeKey: `reminder:${taskId}:${key}:${fireAt.toISOString()}`, actions: v.actions };
}

/**
 * One claim: due rows locked FOR UPDATE SKIP LOCKED (another replica takes others), the tasks
 * service's verdict on each, then marked handled together with the outbox rows of those sent, in
 * the claim's transaction. A failure rolls it all back: the rows wait for the next round.
 */
export async function dispatchDue(deps: ReminderDeps, limit = CLAIM_BATCH): Promise<number> {
  const n = await inTransaction(deps.pool, async (c) => {
    const rows = await claimDue(c, Math.min(limit, MAX_REMINDER_CHECK));
    if (rows.length === 0) return 0;
    const { verdicts } = await deps.bus.request(
      checkRemindersRpc,
      { reminders: rows.map((r) => ({ taskId: r.taskId, userId: r.userId, key: r.reminderKey, at: r.fireAt.toISOString() })) },
      { timeoutMs: CHECK_TIMEOUT_MS },
    );
    const now = Date.now();
    const handled: Handled[] = rows.map((r, i) => {
      const v = verdicts[i];
      const base = { taskId: r.taskId, reminderKey: r.reminderKey, fireAt: r.fireAt.toISOString(), userId: r.userId };
      if (!v) throw new Error(`the tasks service answered ${verdicts.length} of ${rows.length} reminders`);
      if (v.verdict === 'send') {
        reminderMetrics.sent(Math.max(0, now - r.fireAt.getTime()) / 1000);
        return { ...base, outcome: 'sent', payload: request(r.userId, r.taskId, r.reminderKey, r.fireAt, v) };
      }
      if (v.verdict === 'move') return { ...base, outcome: 'moved', moveTo: v.at };
      reminderMetrics.dropped(v.reason);
      return { ...base, outcome: v.reason };
    });
    await finishClaimed(c, handled, notificationRequested.subject);
    return rows.length;
  });
  if (n > 0) deps.relay.kick();
  return n;
}

export interface ReminderTimer {
  /** a reminder at `at` was queued (here or on another replica): wake for it if it is earlier */
  arm(at: Date): void;
  /** read the earliest waiting reminder again (broadcasts may have been lost) */
  refresh(): void;
  stop(): Promise<void>;
}

/**
 * Each replica sleeps until the earliest waiting reminder (never longer than MAX_SLEEP_MS), then
 * claims due reminders until none is left, and sleeps again. Replicas wake together and share the
 * rows through SKIP LOCKED; the embedded mode runs the same timer.
 */
export function startReminderTimer(deps: ReminderDeps, opts: { maxSleepMs?: number } = {}): ReminderTimer {
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;
  const wake = wakeTimer(() => run(), opts.maxSleepMs ?? MAX_SLEEP_MS);
  const sleepUntil = (at: number) => wake.wakeAt(at);

  const round = async () => {
    try {
      while (!stopped && (await dispatchDue(deps)) > 0);
      const next = (await nextReminderAt(deps.pool))?.getTime() ?? Infinity;
      // one already due here is claimed by another replica right now: if it fails, its rows come back to us
      sleepUntil(next <= Date.now() ? Date.now() + BUSY_ELSEWHERE_MS : next);
    } catch (err) {
      deps.log.warn({ err: (err as Error).message }, `reminder dispatch failed; retrying in ${RETRY_MS / 1000} s`);
      sleepUntil(Date.now() + RETRY_MS);
    }
  };

  const run = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = round().finally(() => {
      running = undefined;
      if (again) {
        again = false;
        run();
      }
    });
  };

  // housekeeping: handled rows past their retention, once a day per replica (idempotent)
  const prune = setInterval(() => void pruneHandled(deps.pool).catch((err: unknown) => deps.log.warn({ err: (err as Error).message }, 'pruning handled reminders failed')), 86_400_000);
  prune.unref();
  run();
  return {
    arm(at) {
      if (at.getTime() <= Date.now()) run();
      else sleepUntil(at.getTime());
    },
    refresh: run,
    async stop() {
      stopped = true;
      wake.stop();
      clearInterval(prune);
      await running;
    },
  };
}

/** Every replica's timer hears of reminders queued anywhere (a lost broadcast: it reads the queue again). */
export function listenForArmed(bus: Bus, timer: ReminderTimer): Subscription {
  return bus.onBroadcast(
    REMINDER_ARMED_SUBJECT,
    (payload) => {
      const m = reminderArmed.safeParse(payload);
      if (m.success) timer.arm(new Date(m.data.at));
    },
    () => timer.refresh(),
  );
}
