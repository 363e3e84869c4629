import { AppError, taskEvent, taskEvents, type HttpCall, type Identity, type Profile, type ReminderSchedule, type Task, type TaskEventName, type TaskEventSource, type Topic } from '@tasksvc/proto';
import { enqueueEvent, inTransaction, jsonView, outboxRow, type Config, type OutboxRowValues, type Logger, type OutboxRelay, type Pool, type PoolClient, type Queryable } from '@tasksvc/runtime';
import type { RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';
import { upcomingReminders } from '@tasksvc/proto/calendar/reminders.ts';
import { isValidTimeZone, localDate } from '@tasksvc/proto/calendar/dates.ts';
import { ensureProfile, profileZone } from '../db/profiles.ts';
import type { ProfileRow } from '../db/profiles.ts';
import type { TaskRow } from '../db/tasks.ts';
import type { TopicRow } from '../db/topics.ts';
import type { CreateBatcher } from '../db/create-batcher.ts';
import type { ZoneCache } from '../zone-cache.ts';

export const SCHEMA = 'tasks';

/** The caller's id and "today" in their timezone (profile created on first use). */
export async function caller(c: Queryable, call: HttpCall<unknown, unknown, unknown>, now = new Date()) {
  return callerWith(call, await ensureProfile(c, userOf(call).id), now);
}

export function callerWith<P extends ProfileRow>(call: HttpCall<unknown, unknown, unknown>, profile: P, now = new Date()) {
  const timezone = sentZone(call) ?? profile.timezone;
  return { userId: profile.userId, profile, now, today: localDate(now, timezone) };
}

/** A zone sent with the request (reference behaviour) decides this request's "today". */
export function sentZone(call: HttpCall<unknown, unknown, unknown>): string | undefined {
  const sent = (call.body as { timezone?: unknown } | undefined)?.timezone;
  if (typeof sent === 'string' && !isValidTimeZone(sent)) throw fieldError('timezone', 'must be an IANA timezone such as Europe/Berlin');
  return typeof sent === 'string' ? sent : undefined;
}

export interface Ctx {
  pool: Pool;
  relay: OutboxRelay;
  config: Config;
  log: Logger;
  zones: ZoneCache;
  creates: CreateBatcher;
}

/** PostgreSQL chose the transaction as a deadlock's victim (and rolled it back whole). */
const isDeadlock = (err: unknown) => (err as { code?: unknown } | null)?.code === '40P01';

/**
 * Run a change in one transaction, then nudge the outbox relay so its events leave right away. A
 * transaction that lost a deadlock wrote nothing; it runs again (at most twice more): handlers take
 * their locks in one order (a task's family before its members: db/tasks.ts lockFamily), but writers
 * that do not (an import, two moves between the same parents at once) can still meet one the other way.
 */
export async function transact<T>(ctx: Ctx, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await inTransaction(ctx.pool, fn);
      ctx.relay.kick();
      return result;
    } catch (err) {
      if (!isDeadlock(err) || attempt >= 3) throw err;
      ctx.log.warn({ err, attempt }, 'deadlock: running the transaction again');
    }
  }
}

/** The gateway only forwards `auth: 'user'` routes with a user; a call without one is refused anyway. */
export function userOf(call: HttpCall<unknown, unknown, unknown>): Identity {
  if (!call.user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  return call.user;
}

export const taskNotFound = () => new AppError('TASKS_NOT_FOUND', 'task not found');
export const topicNotFound = () => new AppError('TOPICS_NOT_FOUND', 'topic not found');
/** A parent named in a body that is not the user's task: 404 as for any other task, naming the field. */
export const parentNotFound = () => new AppError('TASKS_NOT_FOUND', 'parent task not found', [{ path: 'body.parentId', message: 'no such task' }]);

/** A 400 naming one body field, in the same shape the gateway's schema validation uses. */
export function fieldError(field: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', 'invalid body', [{ path: `body.${field}`, message }]);
}

export function ruleOf(row: Pick<TaskRow, 'recurrenceType' | 'recurrenceInterval' | 'recurrenceWeekdays' | 'recurrenceWeekOfMonth' | 'recurrenceFixed'>): RecurrenceRule | null {
  if (!row.recurrenceType) return null;
  return {
    type: row.recurrenceType,
    interval: row.recurrenceInterval ?? 1,
    weekdays: row.recurrenceWeekdays ?? [],
    weekOfMonth: row.recurrenceWeekOfMonth,
    fixed: row.recurrenceFixed,
  };
}

/**
 * A task as the API shows it: the row's fields, instants as ISO strings. What the contract does not
 * name (the schedule's anchor; a list row's total) the reply's schema leaves out, as for every reply.
 */
export const toTask = (r: TaskRow): Task => jsonView(r);

export const toTopic = (r: TopicRow): Topic => jsonView(r);

export const toProfile = (r: ProfileRow): Profile => jsonView(r);

/** The date a task is due on: the next occurrence for RECURRING tasks, else its due date. */
export { dueDateOf as effectiveDueDate } from '@tasksvc/proto/calendar/reminders.ts';

/** What a task event is made from here: a row (or the columns of a new one), with what its reminder schedule needs. */
type EventRow = TaskEventSource & Pick<TaskRow, 'reminders' | 'completedAt' | 'dueDate' | 'nextDueDate' | 'dueTime'>;
type EventOptions = {
  completedAt?: Date;
  dueDate?: string | null;
  /** the task before the change, when the change may have removed its reminders (an update) */
  before?: Pick<TaskRow, 'reminders'>;
  /** the user's zone, when the caller has it (else it is read when the task has reminders) */
  zone?: string;
};

/**
 * The schedule the scheduler keeps for the task: its reminders still to come, none once it is done
 * or deleted. Null when the task has no reminders and had none (most events: nothing to keep).
 */
export function reminderScheduleOf(name: TaskEventName, row: EventRow, zone: string, now: Date, before?: Pick<TaskRow, 'reminders'>): ReminderSchedule | null {
  if (row.reminders.length === 0 && !before?.reminders.length) return null;
  const finished = name === 'task.deleted' || (row.type !== 'RECURRING' && row.completedAt !== null);
  return { version: now.toISOString(), due: finished ? [] : upcomingReminders(row, zone, now).map((r) => ({ key: r.key, at: r.at.toISOString() })) };
}

/** A task event's message (the one mapper, proto's taskEvent) with the task's reminder schedule. */
function eventMessage(name: TaskEventName, row: EventRow, opts: EventOptions, zone: string, now = new Date()) {
  return taskEvent(name, row, { now, completedAt: opts.completedAt, dueDate: opts.dueDate, reminders: reminderScheduleOf(name, row, zone, now, opts.before) });
}

/** A task event's outbox row, for a statement that writes it itself (the create: `zone` is the user's). */
export function taskEventRow(name: TaskEventName, row: EventRow, zone: string, opts: EventOptions = {}) {
  return outboxRow(taskEvents[name], eventMessage(name, row, opts, zone));
}

/** The zone a task event's reminder schedule is computed in: it matters only for a task with reminders; read inside the transaction, so it is the one committed with the change. */
async function eventZone(c: Queryable, name: TaskEventName, row: EventRow, opts: EventOptions): Promise<string> {
  const relevant = row.reminders.length > 0 || Boolean(opts.before?.reminders.length);
  return relevant && name !== 'task.deleted' ? (opts.zone ?? (await profileZone(c, row.userId))) : 'UTC';
}

/** Write a task event into the outbox on the transaction's client: it is published if and only if the change commits. */
export async function emitTaskEvent(c: PoolClient, name: TaskEventName, row: EventRow, opts: EventOptions = {}): Promise<void> {
  await enqueueEvent(c, SCHEMA, taskEvents[name], eventMessage(name, row, opts, await eventZone(c, name, row, opts)));
}

/** The outbox row emitTaskEvent would write, for a statement that writes it itself (the caller calls outboxWritten). */
export async function taskEventRowIn(c: PoolClient, name: TaskEventName, row: EventRow, opts: EventOptions = {}): Promise<OutboxRowValues> {
  return outboxRow(taskEvents[name], eventMessage(name, row, opts, await eventZone(c, name, row, opts)));
}
