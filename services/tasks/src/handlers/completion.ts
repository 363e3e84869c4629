import { randomUUID } from 'node:crypto';
import { AppError, type HttpCall } from '@tasksvc/proto';
import { outboxWritten, type PoolClient } from '@tasksvc/runtime';
import { advanceOnCompletion } from '@tasksvc/proto/calendar/recurrence.ts';
import { coinsFor, openSubtasks, parentAfterSubtask } from '../domain/subtasks.ts';
import { addCoins, coinBalance } from '../db/profiles.ts';
import { advanceRecurringTask, completeOpenTask, completionsPartOf, getTask, listSubtasks, lockFamilyAndGet, popCompletion, profileAndLockedHead, setSubtasksCompleted, undoPlainCompletion, updateTask, type CompletionRow, type TaskRow } from '../db/tasks.ts';
import type { ProfileRow } from '../db/profiles.ts';
import { afterComplete, afterUndo } from '../game/hooks.ts';
import { caller, callerWith, effectiveDueDate, emitTaskEvent, ruleOf, SCHEMA, sentZone, taskEventRow, taskEventRowIn, taskNotFound, toTask, transact, userOf, type Ctx } from './common.ts';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';

/**
 * Completing and un-completing tasks, with the subtask rules (docs/tasks.md): a task with open
 * subtasks is completed only together with them; completing the last open subtask completes the
 * parent (a setting) or offers to; a RECURRING parent's subtasks start again with each occurrence;
 * a subtask earns no coins; an undo takes back everything its completion did.
 */

/** Who completes, and when ("today" in their zone). */
export interface Who {
  userId: string;
  today: string;
  now: Date;
}

export interface CompleteOptions {
  /** grant the completion's coins (bulk completion grants none) */
  awardCoins: boolean;
  /** complete the task's open subtasks with it; without, a task with open subtasks is refused */
  completeSubtasks?: boolean;
  /** the completion this one is made along with (undone with it) */
  partOf?: string;
}

const subtasksOpen = (n: number) =>
  new AppError('SUBTASKS_OPEN', `${n} subtask${n === 1 ? ' is' : 's are'} still open: complete them first, or send completeSubtasks: true to complete them with it`, [
    { path: 'body.completeSubtasks', message: 'set it to complete the open subtasks too' },
  ]);

/**
 * Complete one task inside `c` (its family locked: lockFamily). ONE_TIME/DAILY_ELIGIBLE: set
 * completed_at, guarded so a second (or concurrent) completion fails with 409. RECURRING: advance
 * next_due_date along its schedule, guarded on the due date it was read with, after reopening its
 * subtasks for the next occurrence. Records the completion with the coins it granted.
 */
export async function completeIn(c: PoolClient, who: Who, current: TaskRow, opts: CompleteOptions) {
  const { userId, today, now } = who;
  const completionId = randomUUID();
  const open = openSubtasks(current);
  if (open > 0 && !opts.completeSubtasks) throw subtasksOpen(open);
  const subtasks = current.subtaskCount > 0 ? await listSubtasks(c, userId, current.id, today) : [];
  for (const s of subtasks) if (!s.completedAt) await completeIn(c, who, s, { awardCoins: opts.awardCoins, partOf: completionId });
  const coins = opts.awardCoins ? coinsFor(current) : 0;
  const completion = {
    id: completionId,
    taskId: current.id,
    userId,
    completedAt: now,
    localDate: today,
    coinsAwarded: coins,
    previousNextDueDate: current.nextDueDate,
    previousAnchor: current.recurrenceAnchor,
    subtaskOf: current.parentId,
    partOf: opts.partOf ?? null,
  };
  let row: TaskRow;
  /** the profile after the coins, locked (the one-statement completion returns it; null: the user has no profile) */
  let profile: ProfileRow | null;
  const rule = ruleOf(current);
  if (current.type === 'RECURRING' && rule && current.nextDueDate && current.recurrenceAnchor) {
    let resetSubtasks: { id: string; completedAt: string }[] | null = null;
    if (subtasks.length > 0) {
      // the next occurrence starts with its steps open again; the completion keeps how they were (for an undo)
      resetSubtasks = subtasks.map((s) => ({ id: s.id, completedAt: (s.completedAt ?? now).toISOString() }));
      const reopened = await setSubtasksCompleted(c, userId, current.id, subtasks.map((s) => ({ id: s.id, completedAt: null })), today);
      for (const s of reopened) await emitTaskEvent(c, 'task.updated', s);
    }
    const next = advanceOnCompletion(rule, { anchor: current.recurrenceAnchor, nextDueDate: current.nextDueDate }, today);
    // moved on to its next due date while still due on the one read, the completion recorded, its coins added: one statement
    const done = await advanceRecurringTask(c, { ...completion, resetSubtasks }, { nextDueDate: next.nextDueDate, anchor: next.anchor, guardDue: current.nextDueDate }, today);
    if (!done) throw new AppError('CONFLICT', 'the task changed while completing it; try again');
    row = done.row;
    profile = done.profile;
  } else {
    // completed_at set while still null, the completion recorded, its coins added: one statement
    const done = await completeOpenTask(c, completion, today);
    if (!done) throw new AppError('ALREADY_COMPLETED', 'task already completed');
    row = done.row;
    profile = done.profile;
  }
  // Webhook consumers see the occurrence that was done, not the one the schedule moved on to.
  const eventOpts = { completedAt: now, dueDate: effectiveDueDate(current) };
  const info = { userId, task: row, completionId, completedAt: now, localDate: today, awardedCoins: coins };
  let after: { coins: number | null };
  if (profile) {
    // the event goes into the outbox with the quest's statement; the zone is the locked profile's
    after = await afterComplete(c, info, { profile, event: { schema: SCHEMA, row: taskEventRow('task.completed', row, profile.timezone, eventOpts) } });
    outboxWritten(c, SCHEMA);
  } else {
    await emitTaskEvent(c, 'task.completed', row, eventOpts);
    after = await afterComplete(c, info);
  }
  return { row, coins, completionId, balance: after.coins };
}

/** What completing a subtask did to its parent: the parent now, whether all its subtasks are done, whether it was completed too (and its coins). */
export interface ParentOutcome {
  task: TaskRow;
  allSubtasksDone: boolean;
  completed: boolean;
  coinsEarned: number;
}

/**
 * After the subtask completion `completionId`: complete its parent too when that was its last open
 * subtask and the user chose so (`autoComplete`: the profile's autoCompleteParent).
 */
export async function afterSubtaskDone(c: PoolClient, who: Who, parentId: string, completionId: string, opts: { awardCoins: boolean; autoComplete: boolean }): Promise<ParentOutcome | null> {
  const parent = await getTask(c, who.userId, parentId, who.today);
  if (!parent) return null;
  const next = parentAfterSubtask(parent, opts.autoComplete);
  if (next === 'complete') {
    const done = await completeIn(c, who, parent, { awardCoins: opts.awardCoins, partOf: completionId });
    return { task: done.row, allSubtasksDone: true, completed: true, coinsEarned: done.coins };
  }
  return { task: parent, allSubtasksDone: next === 'offer', completed: false, coinsEarned: 0 };
}

type IdCall<B = unknown> = HttpCall<{ id: string }, unknown, B>;

/**
 * The caller (caller()) and the task of `call` with its family locked (lockFamilyAndGet): for a user
 * with a profile, one statement reads the profile and locks the family's head, which is the task
 * unless it is a subtask (then it is read after, as before). The head's `blocked` is computed for the
 * "today" of the zone this replica last saw; when the profile's zone makes another day, a task in a
 * topic is read again (only such a task can be blocked).
 */
async function callerAndTask(ctx: Ctx, c: PoolClient, call: IdCall<unknown>): Promise<{ who: ReturnType<typeof callerWith<ProfileRow>>; current: TaskRow | null }> {
  const userId = userOf(call).id;
  const now = new Date();
  const guess = localDate(now, sentZone(call) ?? ctx.zones.get(userId) ?? 'UTC');
  const found = await profileAndLockedHead(c, userId, call.params.id, guess);
  if (!found) {
    const who = await caller(c, call, now);
    return { who, current: await lockFamilyAndGet(c, who.userId, call.params.id, who.today) };
  }
  const who = callerWith(call, found.profile, now);
  ctx.zones.set(userId, found.profile.timezone);
  const head = found.head;
  if (!head) return { who, current: null };
  const reread = head.id !== call.params.id || (who.today !== guess && head.topicId !== null);
  return { who, current: reread ? await getTask(c, who.userId, call.params.id, who.today) : head };
}

export async function complete(ctx: Ctx, call: IdCall<{ completeSubtasks?: boolean } | undefined>) {
  return transact(ctx, async (c) => {
    const { who, current } = await callerAndTask(ctx, c, call);
    if (!current) throw taskNotFound();
    if (current.completedAt) throw new AppError('ALREADY_COMPLETED', 'task already completed');
    const done = await completeIn(c, who, current, { awardCoins: true, completeSubtasks: call.body?.completeSubtasks === true });
    const parent = current.parentId ? await afterSubtaskDone(c, who, current.parentId, done.completionId, { awardCoins: true, autoComplete: who.profile.autoCompleteParent }) : null;
    // a recurring parent completed along with it has started its subtasks again, this one too
    const task = parent?.completed ? ((await getTask(c, who.userId, current.id, who.today)) ?? done.row) : done.row;
    return {
      task: toTask(task),
      coinsEarned: done.coins,
      completionId: done.completionId,
      // After the game hooks, which may have granted achievement coins too: as the completion left it
      // (the profile is locked), read again only after a parent was completed along with it.
      coins: (!parent?.completed ? done.balance : null) ?? (await coinBalance(c, who.userId)),
      parent: parent && { task: toTask(parent.task), allSubtasksDone: parent.allSubtasksDone, completed: parent.completed, coinsEarned: parent.coinsEarned },
    };
  });
}

/**
 * Undo a completion of `current` inside `c` (its latest, or the one named), with everything it did:
 * a recurring parent's subtasks as they were before it reset them, and the completions made along
 * with it (a parent completed by its last subtask, subtasks completed with their parent), each giving
 * back exactly the coins it recorded. A subtask reopened leaves its parent open too (`reopenParent`:
 * a parent is done only with all its subtasks). Returns the task and every coin taken back.
 */
async function undoIn(c: PoolClient, who: Who, current: TaskRow, opts: { completionId?: string; reopenParent: boolean }): Promise<{ row: TaskRow; removed: number; balance: number | null }> {
  const { userId, today, now } = who;
  const recurring = current.type === 'RECURRING';
  // the usual undo (its completion did nothing beyond its own task) is one statement; else nothing was written and it goes step by step
  const once = await undoPlainCompletion(c, { userId, taskId: current.id, completionId: opts.completionId ?? null, recurring, guardDue: current.nextDueDate, today });
  let completion: CompletionRow | null;
  let row: TaskRow | null;
  let balance: number | null = null;
  let removed = 0;
  if (once.plain) {
    completion = once.completion;
    row = once.row;
    balance = once.balance;
    if (recurring && !completion?.previousNextDueDate) throw new AppError('CONFLICT', 'the task has no completion to undo');
    if (!row) throw recurring ? new AppError('CONFLICT', 'the task changed while undoing; try again') : new AppError('CONFLICT', 'task is not completed');
  } else {
    completion = await popCompletion(c, userId, current.id, opts.completionId);
    if (completion) {
      if (completion.resetSubtasks?.length) {
        const restored = completion.resetSubtasks.map((s) => ({ id: s.id, completedAt: new Date(s.completedAt) }));
        for (const s of await setSubtasksCompleted(c, userId, current.id, restored, today)) await emitTaskEvent(c, 'task.updated', s);
      }
      for (const along of await completionsPartOf(c, userId, completion.id)) {
        const task = along.taskId ? await getTask(c, userId, along.taskId, today) : null;
        if (task) removed += (await undoIn(c, who, task, { completionId: along.id, reopenParent: false })).removed;
      }
    }
    if (recurring) {
      if (!completion?.previousNextDueDate) throw new AppError('CONFLICT', 'the task has no completion to undo');
      const restored = { nextDueDate: completion.previousNextDueDate, recurrenceAnchor: completion.previousAnchor ?? completion.previousNextDueDate };
      row = await updateTask(c, userId, current.id, restored, today, { nextDueDate: current.nextDueDate });
      if (!row) throw new AppError('CONFLICT', 'the task changed while undoing; try again');
    } else {
      row = await updateTask(c, userId, current.id, { completedAt: null }, today, { completed: true });
      if (!row) throw new AppError('CONFLICT', 'task is not completed');
    }
    const back = completion?.coinsAwarded ?? 0;
    if (back > 0) await addCoins(c, userId, -back);
  }
  const own = completion?.coinsAwarded ?? 0;
  removed += own;
  const info = {
    userId,
    task: row,
    completionId: completion?.id ?? '00000000-0000-0000-0000-000000000000',
    completedAt: completion?.completedAt ?? now,
    localDate: completion?.localDate ?? today,
    awardedCoins: own,
  };
  if (once.plain) {
    // the task event goes into the outbox with the quest's statement
    await afterUndo(c, info, { event: { schema: SCHEMA, row: await taskEventRowIn(c, 'task.updated', row) } });
    outboxWritten(c, SCHEMA);
  } else {
    await emitTaskEvent(c, 'task.updated', row);
    await afterUndo(c, info);
  }
  if (opts.reopenParent && row.parentId) {
    const parent = await getTask(c, userId, row.parentId, today);
    if (parent?.completedAt) {
      removed += (await undoIn(c, who, parent, { reopenParent: false })).removed;
      balance = null;
    }
  }
  return { row, removed, balance };
}

/** Undo a task's latest completion in `c` with everything it did (REST, and a CalDAV client reopening a task); `coins`: the balance after it when known (else null). */
export async function undoCompleteIn(c: PoolClient, who: Who, current: TaskRow): Promise<{ row: TaskRow; coinsRemoved: number; coins: number | null }> {
  const { row, removed, balance } = await undoIn(c, who, current, { reopenParent: true });
  return { row, coinsRemoved: removed, coins: balance };
}

export async function undoComplete(ctx: Ctx, call: IdCall) {
  return transact(ctx, async (c) => {
    const { who, current } = await callerAndTask(ctx, c, call);
    if (!current) throw taskNotFound();
    const undone = await undoCompleteIn(c, who, current);
    return { task: toTask(undone.row), coinsRemoved: undone.coinsRemoved, coins: undone.coins ?? (await coinBalance(c, who.userId)) };
  });
}
