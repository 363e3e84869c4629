import { randomUUID } from 'node:crypto';
import { AppError, MAX_SUBTASKS, MAX_TOPIC_TITLE, PROMOTE_UNDO_MINUTES, type CreateTaskBody, type HttpCall } from '@tasksvc/proto';
import { deleteTask, getTask, insertTask, listSubtasks, lockFamily, regroupTasks, restoreTask, setSubtaskOrder, taskSnapshot, tasksByIds } from '../db/tasks.ts';
import { deleteTopic, getTopic, insertTopic, promotedTopicOf } from '../db/topics.ts';
import { topicTitleOf } from '../domain/subtasks.ts';
import { caller, emitTaskEvent, fieldError, SCHEMA, taskEventRow, taskNotFound, toTask, toTopic, transact, userOf, type Ctx } from './common.ts';
import { create } from './tasks.ts';

/** The routes under /api/tasks/<id>/subtasks, the breakdown and promote-to-topic (docs/tasks.md). */

type IdCall<B = unknown> = HttpCall<{ id: string }, unknown, B>;

/** A 400 about the task the path names. */
const pathError = (message: string) => new AppError('VALIDATION_FAILED', 'invalid path', [{ path: 'params.id', message }]);

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
    if (parent.parentId) throw pathError('that task is itself a subtask (subtasks are one level deep)');
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

/**
 * Turn a task into a topic (docs/tasks.md, Promote to topic): a new topic with the task's title,
 * notes, priority and energy; its subtasks become the topic's tasks, in their order (the topic is
 * sequential when asked); the task is gone. The topic keeps the task's row for the undo. Events:
 * task.updated for each subtask (no parent, the new topic), then task.deleted for the task.
 */
export async function promote(ctx: Ctx, call: IdCall<{ sequential?: boolean } | undefined>) {
  return transact(ctx, async (c) => {
    const { userId, today } = await caller(c, call);
    await lockFamily(c, userId, call.params.id);
    const task = await getTask(c, userId, call.params.id, today);
    if (!task) throw taskNotFound();
    if (task.parentId) throw pathError('that task is a subtask: move it out of its parent (parentId null) to have it on its own; a topic is made of a task with subtasks');
    if (task.type === 'RECURRING') throw pathError('a recurring task cannot become a topic (a topic does not recur)');
    if (task.completedAt) throw new AppError('ALREADY_COMPLETED', 'the task is completed: reopen it first to make it a topic');
    const subtaskIds = (await listSubtasks(c, userId, task.id, today)).map((s) => s.id);
    const promotedFrom = { task: (await taskSnapshot(c, userId, task.id))!, subtaskIds };
    const topic = await insertTopic(c, userId, {
      title: topicTitleOf(task.title, MAX_TOPIC_TITLE),
      description: task.notes,
      priority: task.priority,
      sequential: call.body?.sequential ?? false,
      defaultEnergyLevel: task.energyLevel,
      promotedFrom,
    });
    // the subtasks first: deleting a parent deletes its subtasks
    for (const row of await regroupTasks(c, userId, subtaskIds, { parentId: null, topicId: topic.id }, today)) await emitTaskEvent(c, 'task.updated', row);
    const [gone] = await deleteTask(c, userId, task.id);
    await emitTaskEvent(c, 'task.deleted', gone!);
    // read again: whether a task is blocked depends on the others now in the topic
    return { topic: toTopic((await getTopic(c, userId, topic.id))!), tasks: (await tasksByIds(c, userId, subtaskIds, today)).map(toTask) };
  });
}

/**
 * Undo a promote-to-topic within PROMOTE_UNDO_MINUTES, while the topic holds only tasks it was
 * made with (those since moved elsewhere or deleted stay so): the task is back (same id and
 * fields, task.created) with them as its subtasks again (task.updated each), and the topic is gone.
 */
export async function undoPromote(ctx: Ctx, call: IdCall) {
  return transact(ctx, async (c) => {
    const { userId, today } = await caller(c, call);
    const found = await promotedTopicOf(c, userId, call.params.id, PROMOTE_UNDO_MINUTES);
    if (!found) throw new AppError('TASKS_NOT_FOUND', `no promote-to-topic of this task to undo (possible for ${PROMOTE_UNDO_MINUTES} minutes)`);
    const { topic, promotedFrom, taskIds } = found;
    const former = new Set(promotedFrom.subtaskIds);
    if (taskIds.some((id) => !former.has(id))) throw new AppError('CONFLICT', 'the topic has tasks that were not subtasks of the task: move them out of the topic first, or keep it');
    const back = await tasksByIds(c, userId, taskIds, today);
    if (back.some((t) => t.subtaskCount > 0 || t.type === 'RECURRING')) throw new AppError('CONFLICT', 'a task of the topic now recurs or has subtasks of its own, so it cannot be a subtask again');
    if (!(await restoreTask(c, userId, promotedFrom.task))) throw taskNotFound();
    const task = (await getTask(c, userId, call.params.id, today))!;
    await emitTaskEvent(c, 'task.created', task);
    const subtasks = await regroupTasks(c, userId, taskIds, { parentId: task.id, topicId: task.topicId }, today);
    for (const row of subtasks) await emitTaskEvent(c, 'task.updated', row);
    await deleteTopic(c, userId, topic.id);
    return { task: toTask((await getTask(c, userId, task.id, today))!), subtasks: subtasks.map(toTask) };
  });
}
