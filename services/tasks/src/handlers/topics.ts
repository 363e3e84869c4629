import type { CreateTopicBody, HttpCall, UpdateTopicBody } from '@tasksvc/proto';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';
import { ensureProfile } from '../db/profiles.ts';
import { detachTopic, listTasks, setTaskOrder, tasksByIds, touchTopicTasks } from '../db/tasks.ts';
import { countOwnTopics, deleteTopic, getTopic, insertTopic, listTopics, setTopicOrder, updateTopic } from '../db/topics.ts';
import { emitTaskEvent, taskNotFound, toTopic, topicNotFound, transact, userOf, type Ctx } from './common.ts';

type IdCall<B = unknown> = HttpCall<{ id: string }, unknown, B>;

const MAX_TOPIC_TASKS = 1000;

export async function list(ctx: Ctx, call: HttpCall<unknown, { archived: 'true' | 'false' | 'all' }, unknown>) {
  const rows = await listTopics(ctx.pool, userOf(call).id, call.query.archived);
  return { topics: rows.map(toTopic) };
}

export async function get(ctx: Ctx, call: IdCall) {
  const userId = userOf(call).id;
  const client = await ctx.pool.connect();
  try {
    const topic = await getTopic(client, userId, call.params.id);
    if (!topic) throw topicNotFound();
    const profile = await ensureProfile(client, userId);
    const { rows } = await listTasks(client, userId, { topicId: topic.id, limit: MAX_TOPIC_TASKS, offset: 0 }, localDate(new Date(), profile.timezone));
    return { topic: toTopic(topic), tasks: rows };
  } finally {
    client.release();
  }
}

export async function create(ctx: Ctx, call: HttpCall<unknown, unknown, CreateTopicBody>) {
  const b = call.body;
  const row = await insertTopic(ctx.pool, userOf(call).id, b);
  return { topic: toTopic(row) };
}

export async function update(ctx: Ctx, call: IdCall<UpdateTopicBody>) {
  const b = call.body;
  const userId = userOf(call).id;
  return transact(ctx, async (c) => {
    const row = await updateTopic(c, userId, call.params.id, b);
    if (!row) throw topicNotFound();
    if (b.title !== undefined) await touchTopicTasks(c, userId, row.id);
    return { topic: toTopic(row) };
  });
}

/** Deleting a topic keeps its tasks (topic set to none), each announced with task.updated. */
export async function remove(ctx: Ctx, call: IdCall) {
  const userId = userOf(call).id;
  return transact(ctx, async (c) => {
    const profile = await ensureProfile(c, userId);
    if (!(await getTopic(c, userId, call.params.id))) throw topicNotFound();
    const detached = await detachTopic(c, userId, call.params.id, localDate(new Date(), profile.timezone));
    for (const row of detached) await emitTaskEvent(c, 'task.updated', row);
    if (!(await deleteTopic(c, userId, call.params.id))) throw topicNotFound();
    return { success: true as const };
  });
}

export async function reorder(ctx: Ctx, call: HttpCall<unknown, unknown, { topicIds: string[] }>) {
  const userId = userOf(call).id;
  const ids = [...new Set(call.body.topicIds)];
  return transact(ctx, async (c) => {
    if ((await countOwnTopics(c, userId, ids)) !== ids.length) throw topicNotFound();
    await setTopicOrder(c, userId, ids);
    return { success: true as const };
  });
}

/** Order a topic's tasks (what "first open task" of a sequential topic means). Sort order is not part of the event payload, so no event. */
export async function reorderTasks(ctx: Ctx, call: IdCall<{ taskIds: string[] }>) {
  const userId = userOf(call).id;
  const ids = [...new Set(call.body.taskIds)];
  return transact(ctx, async (c) => {
    if (!(await getTopic(c, userId, call.params.id))) throw topicNotFound();
    const own = await tasksByIds(c, userId, ids, '1970-01-01');
    if (own.length !== ids.length || own.some((t) => t.topicId !== call.params.id)) throw taskNotFound();
    await setTaskOrder(c, userId, call.params.id, ids);
    return { success: true as const };
  });
}
