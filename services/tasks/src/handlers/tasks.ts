import { randomUUID } from 'node:crypto';
import { AppError, MAX_SUBTASKS, type BulkBody, type CreateTaskBody, type HttpCall, type ListTasksQuery, type UpdateTaskBody } from '@tasksvc/proto';
import type { PoolClient, Queryable } from '@tasksvc/runtime';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';
import { dueDateOf, type Reminder } from '@tasksvc/proto/calendar/reminders.ts';
import { resolveRecurrence, type RecurrenceInput } from '../domain/task-schedule.ts';
import { ensureProfile, profileZone, reserveSortOrder } from '../db/profiles.ts';
import {
  deleteTask,
  getTask,
  hasSubtasks,
  insertTask,
  listTasks,
  lockFamily,
  lockParent,
  moveSubtasksToTopic,
  tasksByIds,
  updateTask,
  writableColumns,
  type TaskColumns,
  type TaskGuard,
  type TaskRow,
} from '../db/tasks.ts';
import { topicExists } from '../db/topics.ts';
import { postponeTask } from '../game/postponements.ts';
import { caller, emitTaskEvent, fieldError, parentNotFound, SCHEMA, sentZone, taskEventRow, taskNotFound, toTask, topicNotFound, transact, userOf, type Ctx } from './common.ts';
import { afterSubtaskDone, completeIn } from './completion.ts';
import { openSubtasks } from '../domain/subtasks.ts';

type IdCall<B = unknown> = HttpCall<{ id: string }, unknown, B>;

function scheduleOrThrow(input: RecurrenceInput, start: string) {
  const r = resolveRecurrence(input, start);
  if (!r.ok) throw new AppError('VALIDATION_FAILED', 'invalid body', r.issues.map((i) => ({ path: `body.${i.field}`, message: i.message })));
  return r.columns;
}

async function requireTopic(c: PoolClient, userId: string, topicId: string | null | undefined): Promise<void> {
  if (topicId && !(await topicExists(c, userId, topicId))) throw topicNotFound();
}

/** Reminder instants in one form (UTC, `…Z`), so one reminder always has one key. */
const normalReminders = (list: readonly Reminder[]): Reminder[] => list.map((r) => ('at' in r ? { at: new Date(r.at).toISOString() } : { beforeDueMinutes: r.beforeDueMinutes }));

/**
 * A time of day and relative reminders need a due date (a RECURRING task's next one). `cols` are
 * the columns being written, over `stored` (an update's current row); `sent` the body's keys.
 * Clearing the due date clears the time of day with it; relative reminders have to go explicitly.
 */
function checkTimeFields(cols: TaskColumns, stored: Partial<TaskRow>, sent: { dueTime?: unknown; reminders?: unknown }): void {
  if (cols.reminders) cols.reminders = normalReminders(cols.reminders);
  const merged = { ...stored, ...cols } as Partial<TaskRow>;
  const due = dueDateOf({ type: merged.type ?? 'ONE_TIME', dueDate: merged.dueDate ?? null, nextDueDate: merged.nextDueDate ?? null });
  if (due) return;
  if (merged.dueTime) {
    if (sent.dueTime !== undefined) throw fieldError('dueTime', 'a time of day needs a dueDate');
    cols.dueTime = null;
  }
  if ((merged.reminders ?? []).some((r) => 'beforeDueMinutes' in r)) {
    throw sent.reminders !== undefined ? fieldError('reminders', 'a reminder relative to the due date (beforeDueMinutes) needs a dueDate') : fieldError('dueDate', 'the task has reminders relative to its due date: remove them (reminders) to clear the date');
  }
}

export async function list(ctx: Ctx, call: HttpCall<unknown, ListTasksQuery, unknown>) {
  const q = call.query;
  const userId = userOf(call).id;
  const client = await ctx.pool.connect();
  try {
    const { rows, total } = (await inUserZone(ctx, client, userId, undefined, (today) => listTasks(client, userId, q, today))).result;
    return { tasks: rows, total, limit: q.limit, offset: q.offset };
  } finally {
    client.release();
  }
}

/**
 * Run a statement whose answer depends on "today", computed in the zone the request sent or else in
 * the remembered one (see ZoneCache). The statement gets the zone to check against the profile (null
 * when the request sent its own) and reports the profile's zone (null: no profile yet). On a
 * mismatch, or without a profile, it runs once more in the right zone. Also returns the zone of the
 * last run.
 */
async function inUserZone<R extends { zone: string | null }>(
  ctx: Ctx,
  c: Queryable,
  userId: string,
  sent: string | undefined,
  run: (today: string, now: Date, check: string | null) => Promise<R>,
): Promise<{ result: R; zone: string }> {
  let zone = sent ?? ctx.zones.get(userId) ?? (await ensureProfile(c, userId)).timezone;
  const attempt = () => {
    const now = new Date();
    return run(localDate(now, zone), now, sent ? null : zone);
  };
  let result = await attempt();
  if (result.zone === null) {
    const profileZone = (await ensureProfile(c, userId)).timezone; // first use: make the profile
    zone = sent ?? profileZone;
    result = await attempt();
  } else if (!sent && result.zone !== zone) {
    zone = result.zone; // changed on another replica
    result = await attempt();
  }
  if (result.zone !== null) ctx.zones.set(userId, result.zone);
  return { result, zone };
}

export async function get(ctx: Ctx, call: IdCall) {
  const client = await ctx.pool.connect();
  try {
    const { userId, today } = await caller(client, call);
    const row = await getTask(client, userId, call.params.id, today);
    if (!row) throw taskNotFound();
    return { task: toTask(row) };
  } finally {
    client.release();
  }
}

export async function create(ctx: Ctx, call: HttpCall<unknown, unknown, CreateTaskBody>) {
  const b = call.body;
  const userId = userOf(call).id;
  const sent = sentZone(call);
  const parentId = b.parentId ?? null;
  if (parentId && b.type === 'RECURRING') throw fieldError('type', SUBTASK_RECURS);
  // reminders are kept in the profile's zone, also when the request named its own for "today"
  const reminderZone = b.reminders?.length && sent ? (ctx.zones.get(userId) ?? (await profileZone(ctx.pool, userId))) : null;
  // no connection held here: the insert waits for its batch's (CreateBatcher)
  const { result, zone } = await inUserZone(ctx, ctx.pool, userId, sent, (today, now, check) => {
    const { cols, event } = createRow(userId, b, today, now, check ?? reminderZone ?? 'UTC');
    return ctx.creates.insert({ userId, cols, today, outbox: { schema: SCHEMA, row: event }, zone: check });
  });
  if (result.row) {
    ctx.relay.kick();
    return { task: toTask(result.row) };
  }
  // nothing written: with the profile's zone right, the topic or the parent was refused; else the zone changed twice meanwhile
  if (result.zone !== null && (sent || result.zone === zone)) throw parentId ? await parentRefused(ctx.pool, userId, parentId, b.topicId) : topicNotFound();
  throw new AppError('CONFLICT', 'the profile changed while the task was being created; try again');
}

const SUBTASK_RECURS = 'a subtask cannot recur; make its parent recurring instead';
const parentCompleted = () => new AppError('ALREADY_COMPLETED', 'the parent task is completed: reopen it first to add an open subtask', [{ path: 'body.parentId', message: 'that task is completed' }]);

/** Why a create under `parentId` wrote nothing (read after the fact, off the usual path). */
async function parentRefused(q: Queryable, userId: string, parentId: string, topicId: string | null | undefined): Promise<AppError> {
  const parent = await getTask(q, userId, parentId, '1970-01-01');
  if (!parent) return parentNotFound();
  if (parent.parentId) return fieldError('parentId', 'that task is itself a subtask (subtasks are one level deep)');
  if (parent.completedAt) return parentCompleted();
  if (parent.subtaskCount >= MAX_SUBTASKS) return fieldError('parentId', `that task has ${MAX_SUBTASKS} subtasks already`);
  if (topicId !== undefined && topicId !== parent.topicId) return fieldError('topicId', "a subtask is in its parent's topic");
  return new AppError('CONFLICT', 'the parent changed while the subtask was being created; try again');
}

/**
 * The columns and task.created event of a create (REST and CalDAV alike). `extra`: columns the
 * caller decided itself (CalDAV: a schedule anchored before its due date); `eventZone`: the zone
 * the event's reminder instants are given in.
 */
function createRow(userId: string, b: CreateTaskBody, today: string, now: Date, eventZone: string, extra: TaskColumns = {}) {
  const { parentId = null, ...fields } = b;
  if (parentId && b.type === 'RECURRING') throw fieldError('type', SUBTASK_RECURS);
  const schedule = scheduleOrThrow(ruleInput(b.type, b), b.dueDate ?? today);
  // a subtask's statement checks its parent and gives it the parent's topic (and so its event: db/tasks.ts)
  const cols = { ...writableColumns(fields), ...(parentId ? { parentId } : {}), ...schedule, ...extra, id: randomUUID(), createdAt: now, title: b.title, type: b.type };
  checkTimeFields(cols, {}, b);
  const event = taskEventRow('task.created', { reminders: [], completedAt: null, dueDate: null, dueTime: null, ...cols, userId, priority: b.priority }, eventZone);
  return { cols, event, parentId };
}

/**
 * Create a task inside the transaction `c` (CalDAV PUT): the same columns, checks and task.created
 * event as a REST create, in the same single statement (insertTask), without the batcher (whose
 * statements run on connections of their own). `today` is in `zone`, the profile's, read in `c`.
 */
export async function createIn(c: PoolClient, who: { userId: string; today: string; now: Date }, zone: string, b: CreateTaskBody, extra: TaskColumns = {}): Promise<TaskRow> {
  const { userId, today, now } = who;
  if (b.topicId) await requireTopic(c, userId, b.topicId);
  const { cols, event, parentId } = createRow(userId, b, today, now, zone, extra);
  const { row } = await insertTask(c, { userId, cols, today, outbox: { schema: SCHEMA, row: event }, zone: null });
  if (!row) throw parentId ? await parentRefused(c, userId, parentId, b.topicId) : topicNotFound();
  return row;
}

/** The body fields a recurrence rule is made of (RecurrenceInput's, and the task row's, names). */
const RULE_KEYS = ['recurrenceType', 'recurrenceInterval', 'recurrenceWeekdays', 'recurrenceWeekOfMonth', 'recurrenceFixed', 'dueDate'] as const;
type RuleKey = (typeof RULE_KEYS)[number];

/** The rule input of a task of `type` from the rule fields of `from` (a body, or a body over the stored row). */
function ruleInput(type: RecurrenceInput['type'], from: { [K in RuleKey]?: RecurrenceInput[K] | undefined }): RecurrenceInput {
  return {
    type,
    recurrenceType: from.recurrenceType ?? null,
    recurrenceInterval: from.recurrenceInterval ?? null,
    recurrenceWeekdays: from.recurrenceWeekdays ?? null,
    recurrenceWeekOfMonth: from.recurrenceWeekOfMonth ?? null,
    recurrenceFixed: from.recurrenceFixed ?? false,
    dueDate: from.dueDate ?? null,
  };
}

export async function update(ctx: Ctx, call: IdCall<UpdateTaskBody>) {
  return transact(ctx, async (c) => {
    const who = await caller(c, call);
    const current = await getTask(c, who.userId, call.params.id, who.today);
    if (!current) throw taskNotFound();
    return { task: toTask(await updateIn(c, who, current, call.body)) };
  });
}

/** Apply an update body to a task read in `c` (REST PATCH, CalDAV PUT): schedule, tree and time fields as the body says; task.updated when anything changed. */
export async function updateIn(c: PoolClient, who: { userId: string; today: string }, current: TaskRow, b: UpdateTaskBody): Promise<TaskRow> {
  const { userId, today } = who;
  if (b.topicId !== undefined) await requireTopic(c, userId, b.topicId);
  const cols: TaskColumns = writableColumns(b);
  const guard = await placeInTree(c, userId, current, b, cols);
  const type = b.type ?? current.type;
  const subtask = cols.parentId !== undefined ? cols.parentId !== null : current.parentId !== null;
  if (type === 'RECURRING' && subtask) throw cols.parentId ? fieldError('parentId', 'a recurring task cannot be a subtask') : fieldError('type', SUBTASK_RECURS);
  if (b.sortOrder !== undefined) await reserveSortOrder(c, userId, b.sortOrder);
  if (b.type !== undefined || RULE_KEYS.some((k) => b[k] !== undefined)) {
    // The body's rule fields over the stored ones, which carry over only while the task stays
    // RECURRING (leaving RECURRING drops them; the due date always carries over).
    const keep = type === 'RECURRING' && current.type === 'RECURRING';
    const stored = keep ? current : { dueDate: current.dueDate };
    const merged = ruleInput(type, { ...stored, ...cols });
    // A changed rule restarts the schedule from the new due date, else from where it stood.
    Object.assign(cols, scheduleOrThrow(merged, b.dueDate ?? current.nextDueDate ?? current.dueDate ?? today));
    // RECURRING tasks are never "completed"; turning a completed task recurring reopens it.
    if (type === 'RECURRING') cols.completedAt = null;
  }
  checkTimeFields(cols, current, b);
  if (Object.keys(cols).length === 0) return current;
  const row = await updateTask(c, userId, current.id, cols, today, guard);
  if (!row) throw guard ? fieldError('parentId', 'a task with subtasks cannot be a subtask (subtasks are one level deep)') : taskNotFound();
  await emitTaskEvent(c, 'task.updated', row, { before: current });
  // a parent's subtasks stay in its topic
  if (!row.parentId && row.topicId !== current.topicId) for (const moved of await moveSubtasksToTopic(c, userId, row.id, row.topicId, today)) await emitTaskEvent(c, 'task.updated', moved);
  return row;
}

/**
 * Where an update puts the task among parents and subtasks (one level deep), setting `cols`:
 * `parentId` moves it under that parent (the user's, not itself a subtask, not the task) and into
 * its topic; `parentId: null` moves it out, keeping its topic; a subtask given another topic moves
 * out of its parent into that topic. Returns the guard for the update when the task is becoming a
 * subtask: it must have no subtasks of its own.
 */
async function placeInTree(c: PoolClient, userId: string, current: TaskRow, b: UpdateTaskBody, cols: TaskColumns): Promise<TaskGuard | undefined> {
  if (b.parentId === undefined || b.parentId === current.parentId) {
    delete cols.parentId;
    // a subtask moved to another topic leaves its parent
    if (current.parentId && b.topicId !== undefined && b.topicId !== current.topicId) cols.parentId = null;
    return undefined;
  }
  if (b.parentId === null) return undefined;
  if (b.parentId === current.id) throw fieldError('parentId', 'a task cannot be its own subtask');
  const parent = await lockParent(c, userId, b.parentId);
  if (!parent) throw parentNotFound();
  if (parent.parentId) throw fieldError('parentId', 'that task is itself a subtask (subtasks are one level deep)');
  if (parent.completedAt && !current.completedAt) throw parentCompleted();
  if (parent.subtaskCount >= MAX_SUBTASKS) throw fieldError('parentId', `that task has ${MAX_SUBTASKS} subtasks already`);
  if (b.topicId !== undefined && b.topicId !== parent.topicId) throw fieldError('topicId', "a subtask is in its parent's topic");
  if (await hasSubtasks(c, userId, current.id)) throw fieldError('parentId', 'a task with subtasks cannot be a subtask (subtasks are one level deep)');
  cols.topicId = parent.topicId;
  return { childless: true };
}

export async function remove(ctx: Ctx, call: IdCall) {
  return transact(ctx, async (c) => {
    const userId = userOf(call).id;
    await lockFamily(c, userId, call.params.id);
    if (!(await removeIn(c, userId, call.params.id))) throw taskNotFound();
    return { success: true as const };
  });
}

/** Delete a task and its subtasks in `c`, a task.deleted event each; false when the user has no such task. */
export async function removeIn(c: PoolClient, userId: string, id: string): Promise<boolean> {
  const rows = await deleteTask(c, userId, id);
  if (rows[0]?.id !== id) return false;
  for (const row of rows) await emitTaskEvent(c, 'task.deleted', row);
  return true;
}

export async function snooze(ctx: Ctx, call: IdCall<{ snoozedUntil: string }>) {
  return transact(ctx, async (c) => {
    const { userId, today } = await caller(c, call);
    if (call.body.snoozedUntil <= today) throw fieldError('snoozedUntil', `must be after today (${today} in your timezone)`);
    const current = await getTask(c, userId, call.params.id, today);
    if (!current) throw taskNotFound();
    if (current.completedAt) throw new AppError('CONFLICT', 'a completed task cannot be snoozed');
    const row = await updateTask(c, userId, current.id, { snoozedUntil: call.body.snoozedUntil }, today);
    if (!row) throw taskNotFound();
    await emitTaskEvent(c, 'task.updated', row);
    return { task: toTask(row) };
  });
}

export async function unsnooze(ctx: Ctx, call: IdCall) {
  return transact(ctx, async (c) => {
    const { userId, today } = await caller(c, call);
    const row = await updateTask(c, userId, call.params.id, { snoozedUntil: null }, today);
    if (!row) throw taskNotFound();
    await emitTaskEvent(c, 'task.updated', row);
    return { task: toTask(row) };
  });
}

/** Pause a task until a later date (or until resumed): the quest and reminders leave it alone meanwhile. */
export async function pause(ctx: Ctx, call: HttpCall<{ id: string }, unknown, { until?: string | null } | undefined>) {
  return transact(ctx, async (c) => {
    const { userId, today, now } = await caller(c, call);
    const until = call.body?.until ?? null;
    if (until !== null && until <= today) throw fieldError('until', `must be after today (${today} in your timezone)`);
    const current = await getTask(c, userId, call.params.id, today);
    if (!current) throw taskNotFound();
    if (current.completedAt) throw new AppError('CONFLICT', 'a completed task cannot be paused');
    const row = (await updateTask(c, userId, current.id, { pausedAt: current.pausedAt ?? now, pausedUntil: until }, today))!;
    await emitTaskEvent(c, 'task.updated', row);
    return { task: toTask(row) };
  });
}

export async function resume(ctx: Ctx, call: IdCall) {
  return transact(ctx, async (c) => {
    const { userId, today } = await caller(c, call);
    const row = await updateTask(c, userId, call.params.id, { pausedAt: null, pausedUntil: null }, today);
    if (!row) throw taskNotFound();
    await emitTaskEvent(c, 'task.updated', row);
    return { task: toTask(row) };
  });
}

/** Move a task to tomorrow (snooze, and a due date that is earlier), against the one daily postpone limit. */
export async function postpone(ctx: Ctx, call: IdCall) {
  return transact(ctx, async (c) => {
    const { userId, today } = await caller(c, call);
    await postponeTask(c, userId, today, call.params.id, 'task');
    const row = (await getTask(c, userId, call.params.id, today))!;
    await emitTaskEvent(c, 'task.updated', row);
    return { task: toTask(row) };
  });
}

/** Bulk actions in one transaction. Ids that are not the caller's are skipped (never revealed). */
export async function bulk(ctx: Ctx, call: HttpCall<unknown, unknown, BulkBody>) {
  const b = call.body;
  return transact(ctx, async (c) => {
    const who = await caller(c, call);
    const { userId, today } = who;
    // Parents first, so a subtask in the request goes with its parent rather than on its own; to
    // complete, subtasks first, so a parent whose subtasks are all in the request is done with them.
    const subtasksFirst = b.action === 'complete' ? -1 : 1;
    const rows = (await tasksByIds(c, userId, [...new Set(b.taskIds)], today)).sort((x, y) => subtasksFirst * (Number(x.parentId !== null) - Number(y.parentId !== null)));
    let affected = 0;
    if (b.action === 'changeTopic') await requireTopic(c, userId, b.topicId);
    if (b.action === 'snooze' && b.snoozedUntil !== null && b.snoozedUntil <= today) throw fieldError('snoozedUntil', `must be after today (${today} in your timezone)`);
    /** subtasks already deleted or moved with their parent, earlier in this loop */
    const along = new Set<string>();
    for (const current of rows) {
      if (along.has(current.id)) {
        affected++;
        continue;
      }
      switch (b.action) {
        case 'complete': {
          // Reference: bulk completion skips RECURRING tasks and grants no coins. A task with open
          // subtasks is skipped too (completing it is asked for one by one: docs/tasks.md).
          await lockFamily(c, userId, current.id);
          const now = (await getTask(c, userId, current.id, today))!;
          if (now.type === 'RECURRING' || now.completedAt || openSubtasks(now) > 0) continue;
          const done = await completeIn(c, who, now, { awardCoins: false });
          if (now.parentId) await afterSubtaskDone(c, who, now.parentId, done.completionId, { awardCoins: false, autoComplete: who.profile.autoCompleteParent });
          affected++;
          break;
        }
        case 'delete': {
          await lockFamily(c, userId, current.id);
          // a parent takes its subtasks along
          const gone = await deleteTask(c, userId, current.id);
          for (const row of gone) {
            await emitTaskEvent(c, 'task.deleted', row);
            along.add(row.id);
          }
          if (gone.length > 0) affected++;
          break;
        }
        case 'changeTopic': {
          // as a PATCH: a subtask given another topic leaves its parent; a parent's subtasks follow it
          const leaves = current.parentId !== null && current.topicId !== b.topicId;
          const row = await updateTask(c, userId, current.id, leaves ? { topicId: b.topicId, parentId: null } : { topicId: b.topicId }, today);
          if (!row) break;
          await emitTaskEvent(c, 'task.updated', row);
          if (!row.parentId) for (const moved of await moveSubtasksToTopic(c, userId, row.id, row.topicId, today)) await emitTaskEvent(c, 'task.updated', moved);
          affected++;
          // its subtasks followed it (also those in this request, read before they moved)
          for (const r of rows) if (r.parentId === row.id) along.add(r.id);
          break;
        }
        default: {
          const cols: TaskColumns = b.action === 'setPriority' ? { priority: b.priority } : { snoozedUntil: b.snoozedUntil };
          const row = await updateTask(c, userId, current.id, cols, today);
          if (row) {
            await emitTaskEvent(c, 'task.updated', row);
            affected++;
          }
        }
      }
    }
    return { success: true as const, affected };
  });
}
