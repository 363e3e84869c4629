import { randomUUID } from 'node:crypto';
import { AppError, MAX_SUBTASKS, type CreateTaskBody, type HttpCall } from '@tasksvc/proto';
import { getTask, insertTask, listSubtasks, lockFamily, setSubtaskOrder, tasksByIds } from '../db/tasks.ts';
import { caller, fieldError, SCHEMA, taskEventRow, taskNotFound, toTask, transact, userOf, type Ctx } from './common.ts';
import { create } from './tasks.ts';

/** The routes under /api/tasks/<id>/subtasks and the breakdown (docs/tasks.md). */

type IdCall<B = unknown> = HttpCall<{ id: string }, unknown, B>;

/** A refusal about the parent a body named, said of the path's id instead (these routes name the parent there). */
function aboutThePath(err: unknown): unknown {
  if (!(err instanceof AppError) || !err.issues?.some((i) => i.path === 'body.parentId')) return err;
  return new AppError(err.code, err.message, err.issues.flatMap((i) => (i.path !== 'body.parentId' ? [i] : err.code === 'TASKS_NOT_FOUND' ? [] : [{ ...i, path: 'params.id' }])));
}

export async function list(ctx: Ctx, call: IdCall) {
  const client = await ctx.pool.connect();
  try {
    const { userId, today } = await caller(client, call);
    if (!(await getTask(client, userId, call.params.id, today))) throw taskNotFound();
    return { tasks: (await listSubtasks(client, userId, call.params.id, today)).map(toTask) };
  } finally {
    client.release();
  }
}

/** POST /api/tasks/<id>/subtasks: as POST /api/tasks with parentId. */
export async function add(ctx: Ctx, call: IdCall<Omit<CreateTaskBody, 'parentId'>>) {
  try {
    return await create(ctx, { ...call, body: { ...call.body, parentId: call.params.id } });
  } catch (err) {
    throw aboutThePath(err);
  }
}

/** Order a task's subtasks: the listed ones first, in the order given (those not listed keep their order after them). */
export async function reorder(ctx: Ctx, call: IdCall<{ taskIds: string[] }>) {
  const userId = userOf(call).id;
  const ids = [...new Set(call.body.taskIds)];
  return transact(ctx, async (c) => {
    await lockFamily(c, userId, call.params.id);
    if (!(await getTask(c, userId, call.params.id, '1970-01-01'))) throw taskNotFound();
    const own = await tasksByIds(c, userId, ids, '1970-01-01');
    if (own.length !== ids.length || own.some((t) => t.parentId !== call.params.id)) throw new AppError('TASKS_NOT_FOUND', 'not a subtask of this task', [{ path: 'body.taskIds', message: 'every id must be a subtask of the task' }]);
    await setSubtaskOrder(c, userId, call.params.id, ids);
    return { success: true as const };
  });
}

/**
 * Split a task into 2–10 subtasks (the reference's breakdown, with its `subtaskTitles`): they are
 * added in order after any it has, as ONE_TIME tasks with the task's priority and energy. The
 * reference turned the task into a topic of those tasks; here the task stays and keeps them as its
 * steps (promote-to-topic makes the topic). Each goes in with the create's own statement, which
 * checks the parent (top-level, open, room for them: at most MAX_SUBTASKS).
 */
export async function breakdown(ctx: Ctx, call: IdCall<{ subtaskTitles: string[] }>) {
  const titles = call.body.subtaskTitles;
  return transact(ctx, async (c) => {
    const who = await caller(c, call);
    const { userId, today, now } = who;
    await lockFamily(c, userId, call.params.id);
    const parent = await getTask(c, userId, call.params.id, today);
    if (!parent) throw taskNotFound();
    if (parent.parentId) throw new AppError('VALIDATION_FAILED', 'invalid path', [{ path: 'params.id', message: 'that task is itself a subtask (subtasks are one level deep)' }]);
    if (parent.completedAt) throw new AppError('ALREADY_COMPLETED', 'the task is completed: reopen it first to break it down');
    if (parent.subtaskCount + titles.length > MAX_SUBTASKS) throw fieldError('subtaskTitles', `a task has at most ${MAX_SUBTASKS} subtasks (it has ${parent.subtaskCount})`);
    const subtasks = [];
    for (const title of titles) {
      // each takes the next list position, so they keep the order given
      const cols = { id: randomUUID(), createdAt: now, title, type: 'ONE_TIME' as const, priority: parent.priority, energyLevel: parent.energyLevel, parentId: parent.id };
      const event = taskEventRow('task.created', { ...cols, userId, topicId: parent.topicId, dueDate: null, nextDueDate: null, dueTime: null, reminders: [], completedAt: null }, who.profile.timezone);
      const { row } = await insertTask(c, { userId, cols, today, outbox: { schema: SCHEMA, row: event }, zone: null });
      if (!row) throw new AppError('CONFLICT', 'the task changed while it was being broken down; try again');
      subtasks.push(toTask(row));
    }
    return { task: toTask((await getTask(c, userId, parent.id, today))!), subtasks };
  });
}
