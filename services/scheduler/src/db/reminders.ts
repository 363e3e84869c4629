import type { ReminderSchedule } from '@tasksvc/proto';
import { names, orm, selectList, statement, type Queryable } from '@tasksvc/runtime';
import { isNull, lt, min, sql } from 'drizzle-orm';
import { reminderQueue as q } from './schema.ts';

/** Handled rows are kept this long (a redelivered schedule is far younger), then pruned. */
const HANDLED_RETENTION = '35 days';
const p = sql.placeholder;

const apply = statement(
  sql`WITH d AS (
        SELECT x->>'key' AS reminder_key, (x->>'at')::timestamptz AS fire_at FROM jsonb_array_elements(${p('due')}::jsonb) AS x
      ), gone AS (
        DELETE FROM ${q} WHERE ${q.taskId} = ${p('taskId')} AND ${q.handledAt} IS NULL AND ${q.version} < ${p('version')}::timestamptz
          AND NOT EXISTS (SELECT 1 FROM d WHERE d.reminder_key = ${q.reminderKey} AND d.fire_at = ${q.fireAt})
      ), added AS (
        INSERT INTO ${q} (${names(q.taskId, q.reminderKey, q.fireAt, q.userId, q.version)})
        SELECT ${p('taskId')}, reminder_key, fire_at, ${p('userId')}, ${p('version')} FROM d
        ON CONFLICT (${names(q.taskId, q.reminderKey, q.fireAt)}) DO UPDATE SET ${names(q.version)} = GREATEST(${q.version}, EXCLUDED.version)
          WHERE ${q.handledAt} IS NULL
        RETURNING ${q.fireAt} AS fire_at
      )
      SELECT min(fire_at) AS earliest FROM added`,
  { earliest: sql<Date | null>`` },
);

/**
 * Keep the queue rows of one task as its event's schedule says: rows it no longer lists go (unless
 * a newer schedule queued them: out-of-order events never lose a reminder), rows it lists are
 * queued (a row already handled stays handled). Returns the earliest instant it queued.
 */
export async function applySchedule(db: Queryable, taskId: string, userId: string, schedule: ReminderSchedule): Promise<Date | null> {
  const { rows } = await apply.run(db, { taskId, userId, version: schedule.version, due: JSON.stringify(schedule.due) });
  const earliest = rows[0]?.earliest;
  return earliest ? new Date(earliest) : null;
}

/** The earliest reminder waiting (an index probe of `reminder_queue_due`). */
export async function nextReminderAt(db: Queryable): Promise<Date | null> {
  const [row] = await orm(db).select({ at: min(q.fireAt) }).from(q).where(isNull(q.handledAt));
  return row?.at ?? null;
}

const due = { taskId: q.taskId, reminderKey: q.reminderKey, fireAt: q.fireAt, userId: q.userId };
const claim = statement(
  sql`SELECT ${selectList(due)} FROM ${q} WHERE ${q.handledAt} IS NULL AND ${q.fireAt} <= now() ORDER BY ${q.fireAt} LIMIT ${p('limit')} FOR UPDATE SKIP LOCKED`,
  due,
);
export type QueuedReminder = { taskId: string; reminderKey: string; fireAt: Date; userId: string };

/** Due rows for the caller's transaction, locked: another replica's claim skips them. */
export async function claimDue(db: Queryable, limit: number): Promise<QueuedReminder[]> {
  return (await claim.run(db, { limit })).rows;
}

/** How one claimed reminder ended: `payload` (a notification request) when it is sent, `moveTo` when it moved. */
export interface Handled {
  taskId: string;
  reminderKey: string;
  fireAt: string;
  userId: string;
  outcome: string;
  payload?: unknown;
  moveTo?: string;
}

const finish = statement(
  sql`WITH h AS (
        SELECT (x->>'taskId')::uuid AS task_id, x->>'reminderKey' AS reminder_key, (x->>'fireAt')::timestamptz AS fire_at, (x->>'userId')::uuid AS user_id,
               x->>'outcome' AS outcome, x->'payload' AS payload, (x->>'moveTo')::timestamptz AS move_to
        FROM jsonb_array_elements(${p('handled')}::jsonb) AS x
      ), marked AS (
        UPDATE ${q} SET ${names(q.handledAt)} = now(), ${names(q.outcome)} = h.outcome FROM h
        WHERE ${q.taskId} = h.task_id AND ${q.reminderKey} = h.reminder_key AND ${q.fireAt} = h.fire_at
      ), moved AS (
        INSERT INTO ${q} (${names(q.taskId, q.reminderKey, q.fireAt, q.userId, q.version)})
        SELECT task_id, reminder_key, move_to, user_id, now() FROM h WHERE move_to IS NOT NULL
        ON CONFLICT DO NOTHING
      )
      INSERT INTO scheduler.outbox (id, subject, payload) SELECT gen_random_uuid(), ${p('subject')}, payload FROM h WHERE payload IS NOT NULL`,
);

/**
 * Mark claimed reminders handled and, in the same statement (so in the claim's transaction), write
 * the notification requests of the ones sent to the outbox: a reminder is requested exactly once.
 */
export async function finishClaimed(db: Queryable, handled: Handled[], subject: string): Promise<number> {
  if (handled.length === 0) return 0;
  return (await finish.run(db, { handled: JSON.stringify(handled), subject })).rowCount;
}

/** Drop handled rows past their retention. */
export async function pruneHandled(db: Queryable): Promise<number> {
  const res = await orm(db)
    .delete(q)
    .where(lt(q.handledAt, sql`now() - ${HANDLED_RETENTION}::interval`));
  return res.rowCount ?? 0;
}
