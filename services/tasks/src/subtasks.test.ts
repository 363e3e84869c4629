import { randomUUID } from 'node:crypto';
import { TASK_EVENTS_FILTER, taskEvent, taskEvents, type TaskEventMessage } from '@tasksvc/proto';
import type { Subscription } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { quietLogger, testSystemConfig, until } from '../../../tools/testenv/index.ts';
import { apiClient, serveTestIdentities } from '../test/support.ts';
import { tasksService } from './service.ts';

/**
 * Subtasks through the API, each rule of docs/tasks.md: HTTP → gateway → in-process bus → tasks
 * service → PostgreSQL, task events read back from the durable stream. Identity is the test double.
 */

let system: RunningSystem;
let identity: Subscription;
const events: TaskEventMessage[] = [];
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  const config = await testSystemConfig({ PUBLIC_APP_URL: 'https://tasks.example.test' });
  system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
  identity = serveTestIdentities(system.bus);
  await system.bus.consume(taskEvents['task.created'], async (m) => void events.push(m), { durable: 'subtasks-test-observer', filter: TASK_EVENTS_FILTER });
  api = apiClient(system.url);
});

afterAll(async () => {
  await identity?.stop();
  await system?.stop();
});

const eventsOf = (id: string) => events.filter((e) => e.payload.task.id === id);
const eventFor = (name: string, id: string) => until(() => events.findLast((e) => e.payload.event === name && e.payload.task.id === id), `${name} of ${id}`);

async function createTask(as: string, body: Record<string, unknown>) {
  const res = await api('POST', '/api/tasks', { as, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task;
}
const getTask = async (as: string, id: string) => (await api('GET', `/api/tasks/${id}`, { as })).body.task;
const newTopic = async (as: string, body: Record<string, unknown>) => (await api('POST', '/api/topics', { as, body })).body.topic;
/** The user's task count as the profile keeps it, and as counted. */
async function counts(userId: string) {
  const { rows } = await system.pool.query<{ kept: number; n: string }>('SELECT task_count AS kept, (SELECT count(*) FROM tasks.tasks WHERE user_id = $1) AS n FROM tasks.profiles WHERE user_id = $1', [userId]);
  return { kept: rows[0]!.kept, n: Number(rows[0]!.n) };
}
function expectRefused(res: { status: number; body: { code: string; issues?: { path: string }[] } }, status: number, code: string, field: string) {
  expect([res.status, res.body.code], JSON.stringify(res.body)).toEqual([status, code]);
  expect(res.body.issues?.map((i) => i.path)).toContain(field);
}

describe('subtasks: the parentId field', () => {
  it("a subtask is created with POST /api/tasks and parentId, in its parent's topic; its event carries both", async () => {
    const ann = randomUUID();
    const topic = await newTopic(ann, { title: 'Home' });
    const parent = await createTask(ann, { title: 'Paint the hall', topicId: topic.id });
    expect(parent.parentId).toBeNull();
    const sub = await createTask(ann, { title: 'Buy paint', parentId: parent.id });
    expect(sub).toMatchObject({ parentId: parent.id, topicId: topic.id, blocked: false, type: 'ONE_TIME' });
    // naming the same topic is fine
    expect((await createTask(ann, { title: 'Tape the edges', parentId: parent.id, topicId: topic.id })).topicId).toBe(topic.id);
    const created = await eventFor('task.created', sub.id);
    expect(created.payload.task).toMatchObject({ id: sub.id, title: 'Buy paint', type: 'ONE_TIME', priority: 'NORMAL', topicId: topic.id, parentId: parent.id, dueDate: null, completedAt: null, createdAt: sub.createdAt });
    expect(created.payload.task).toEqual(taskEvent('task.created', sub).payload.task);
    expect((await eventFor('task.created', parent.id)).payload.task.parentId).toBeNull();
    expect((await getTask(ann, sub.id)).parentId).toBe(parent.id);
  });

  it('refuses a parent that is not the caller’s task (404), a subtask as parent, a recurring subtask and another topic (400), naming the field and writing nothing', async () => {
    const ben = randomUUID();
    const other = randomUUID();
    const theirs = await createTask(other, { title: 'Not yours' });
    const parent = await createTask(ben, { title: 'Parent' });
    const sub = await createTask(ben, { title: 'Sub', parentId: parent.id });
    const topic = await newTopic(ben, { title: 'Elsewhere' });
    const before = await counts(ben);
    const post = (body: Record<string, unknown>) => api('POST', '/api/tasks', { as: ben, body: { title: 'x', ...body } });
    expectRefused(await post({ parentId: theirs.id }), 404, 'TASKS_NOT_FOUND', 'body.parentId');
    expectRefused(await post({ parentId: randomUUID() }), 404, 'TASKS_NOT_FOUND', 'body.parentId');
    expectRefused(await post({ parentId: 'nope' }), 400, 'VALIDATION_FAILED', 'body.parentId');
    expectRefused(await post({ parentId: sub.id }), 400, 'VALIDATION_FAILED', 'body.parentId');
    expectRefused(await post({ parentId: parent.id, type: 'RECURRING' }), 400, 'VALIDATION_FAILED', 'body.type');
    expectRefused(await post({ parentId: parent.id, topicId: topic.id }), 400, 'VALIDATION_FAILED', 'body.topicId');
    expect(await counts(ben)).toEqual(before);
    expect((await api('GET', '/api/settings/profile', { as: ben })).body.profile.totalTasksCreated).toBe(2);
    expect((await getTask(other, theirs.id)).title).toBe('Not yours');
  });

  it('PATCH moves a task under a parent (into its topic) and out again (parentId null keeps the topic)', async () => {
    const cat = randomUUID();
    const topic = await newTopic(cat, { title: 'Work' });
    const parent = await createTask(cat, { title: 'Ship it', topicId: topic.id });
    const loose = await createTask(cat, { title: 'Write notes' });
    const moved = await api('PATCH', `/api/tasks/${loose.id}`, { as: cat, body: { parentId: parent.id } });
    expect(moved.status).toBe(200);
    expect(moved.body.task).toMatchObject({ parentId: parent.id, topicId: topic.id });
    expect((await eventFor('task.updated', loose.id)).payload.task).toMatchObject({ parentId: parent.id, topicId: topic.id });
    const out = await api('PATCH', `/api/tasks/${loose.id}`, { as: cat, body: { parentId: null } });
    expect(out.body.task).toMatchObject({ parentId: null, topicId: topic.id });
    await until(() => eventsOf(loose.id).findLast((e) => e.payload.task.parentId === null && e.payload.event === 'task.updated'), 'moved out');
  });

  it('PATCH keeps subtasks one level deep and never recurring, naming the field', async () => {
    const dan = randomUUID();
    const other = randomUUID();
    const parent = await createTask(dan, { title: 'Parent' });
    const sub = await createTask(dan, { title: 'Sub', parentId: parent.id });
    const loose = await createTask(dan, { title: 'Loose' });
    const daily = await createTask(dan, { title: 'Daily', type: 'RECURRING' });
    const theirs = await createTask(other, { title: 'Theirs' });
    const topic = await newTopic(dan, { title: 'T' });
    const patch = (id: string, body: Record<string, unknown>) => api('PATCH', `/api/tasks/${id}`, { as: dan, body });
    expectRefused(await patch(loose.id, { parentId: loose.id }), 400, 'VALIDATION_FAILED', 'body.parentId');
    expectRefused(await patch(loose.id, { parentId: sub.id }), 400, 'VALIDATION_FAILED', 'body.parentId');
    expectRefused(await patch(parent.id, { parentId: loose.id }), 400, 'VALIDATION_FAILED', 'body.parentId');
    expectRefused(await patch(loose.id, { parentId: theirs.id }), 404, 'TASKS_NOT_FOUND', 'body.parentId');
    expectRefused(await patch(daily.id, { parentId: parent.id }), 400, 'VALIDATION_FAILED', 'body.parentId');
    expectRefused(await patch(sub.id, { type: 'RECURRING' }), 400, 'VALIDATION_FAILED', 'body.type');
    expectRefused(await patch(loose.id, { parentId: parent.id, topicId: topic.id }), 400, 'VALIDATION_FAILED', 'body.topicId');
    // nothing changed
    expect((await getTask(dan, loose.id)).parentId).toBeNull();
    expect((await getTask(dan, parent.id)).parentId).toBeNull();
    expect((await getTask(dan, sub.id))).toMatchObject({ parentId: parent.id, type: 'ONE_TIME' });
    // moved out, a subtask may recur
    expect((await patch(sub.id, { parentId: null, type: 'RECURRING' })).body.task).toMatchObject({ parentId: null, type: 'RECURRING' });
  });

  it("subtasks stay in their parent's topic: a parent's move takes them along, a subtask given another topic leaves its parent", async () => {
    const eve = randomUUID();
    const home = await newTopic(eve, { title: 'Home' });
    const work = await newTopic(eve, { title: 'Work' });
    const parent = await createTask(eve, { title: 'Parent', topicId: home.id });
    const a = await createTask(eve, { title: 'a', parentId: parent.id });
    const b = await createTask(eve, { title: 'b', parentId: parent.id });
    await api('PATCH', `/api/tasks/${parent.id}`, { as: eve, body: { topicId: work.id } });
    expect((await getTask(eve, a.id)).topicId).toBe(work.id);
    expect((await eventFor('task.updated', b.id)).payload.task).toMatchObject({ topicId: work.id, parentId: parent.id });
    const left = await api('PATCH', `/api/tasks/${a.id}`, { as: eve, body: { topicId: home.id } });
    expect(left.body.task).toMatchObject({ topicId: home.id, parentId: null });
    // bulk: the parent with its (listed) subtask goes to no topic together; a listed subtask does not leave
    const bulk = await api('PATCH', '/api/tasks/bulk', { as: eve, body: { action: 'changeTopic', taskIds: [b.id, parent.id], topicId: null } });
    expect(bulk.body).toEqual({ success: true, affected: 2 });
    expect(await getTask(eve, b.id)).toMatchObject({ topicId: null, parentId: parent.id });
    // deleting a topic leaves parent and subtask together without one
    const c = await createTask(eve, { title: 'c', parentId: (await createTask(eve, { title: 'P2', topicId: home.id })).id });
    await api('DELETE', `/api/topics/${home.id}`, { as: eve });
    expect((await getTask(eve, c.id)).topicId).toBeNull();
  });

  it('lists a parent’s subtasks (parentId=<id>, in their order) and top-level tasks only (parentId=none)', async () => {
    const fay = randomUUID();
    const parent = await createTask(fay, { title: 'Parent' });
    const subs = [];
    for (const title of ['one', 'two', 'three']) subs.push(await createTask(fay, { title, parentId: parent.id }));
    await createTask(fay, { title: 'Other' });
    const of = await api('GET', `/api/tasks?parentId=${parent.id}`, { as: fay });
    expect(of.body.tasks.map((t: { title: string }) => t.title)).toEqual(['one', 'two', 'three']);
    expect(of.body.total).toBe(3);
    const top = await api('GET', '/api/tasks?parentId=none', { as: fay });
    expect(top.body.tasks.map((t: { title: string }) => t.title)).toEqual(['Parent', 'Other']);
    expect((await api('GET', '/api/tasks?parentId=bad', { as: fay })).status).toBe(400);
  });

  it('deleting a parent deletes its subtasks (an event each, the task count follows); deleting a subtask leaves its parent', async () => {
    const gus = randomUUID();
    const parent = await createTask(gus, { title: 'Parent' });
    const a = await createTask(gus, { title: 'a', parentId: parent.id });
    const b = await createTask(gus, { title: 'b', parentId: parent.id });
    await createTask(gus, { title: 'Keep' });
    expect((await api('DELETE', `/api/tasks/${a.id}`, { as: gus })).body).toEqual({ success: true });
    expect((await getTask(gus, parent.id)).title).toBe('Parent');
    expect((await api('DELETE', `/api/tasks/${parent.id}`, { as: gus })).body).toEqual({ success: true });
    expect((await api('GET', `/api/tasks/${b.id}`, { as: gus })).status).toBe(404);
    expect((await eventFor('task.deleted', b.id)).payload.task.parentId).toBe(parent.id);
    await eventFor('task.deleted', parent.id);
    expect(await counts(gus)).toEqual({ kept: 1, n: 1 });
    expect((await api('GET', '/api/tasks', { as: gus })).body.total).toBe(1);
    // bulk: a parent and its subtask in one request count as two
    const p2 = await createTask(gus, { title: 'P2' });
    const c = await createTask(gus, { title: 'c', parentId: p2.id });
    expect((await api('PATCH', '/api/tasks/bulk', { as: gus, body: { action: 'delete', taskIds: [c.id, p2.id] } })).body).toEqual({ success: true, affected: 2 });
    expect(await counts(gus)).toEqual({ kept: 1, n: 1 });
  });

  it("in a sequential topic the line is of top-level tasks: a subtask neither blocks nor is blocked", async () => {
    const hal = randomUUID();
    const topic = await newTopic(hal, { title: 'Steps', sequential: true });
    const first = await createTask(hal, { title: 'first', topicId: topic.id });
    const sub = await createTask(hal, { title: 'first, part 1', parentId: first.id });
    const second = await createTask(hal, { title: 'second', topicId: topic.id });
    expect(sub.blocked).toBe(false);
    expect(second.blocked).toBe(true);
    await api('POST', `/api/tasks/${first.id}/complete`, { as: hal, body: { completeSubtasks: true } });
    expect((await getTask(hal, second.id)).blocked).toBe(false);
  });

  it('the iCal feed names a subtask’s parent with RELATED-TO;RELTYPE=PARENT', async () => {
    const ivy = randomUUID();
    const parent = await createTask(ivy, { title: 'Trip', dueDate: '2030-05-01' });
    const sub = await createTask(ivy, { title: 'Book train', parentId: parent.id, dueDate: '2030-04-20' });
    const url = new URL((await api('POST', '/api/settings/calendar-feed', { as: ivy })).body.url);
    const ics = (await api('GET', url.pathname)).text.replaceAll('\r\n ', ''); // unfolded
    const event = ics.split('BEGIN:VEVENT').find((e) => e.includes(`UID:task-${sub.id}@task-service`))!;
    expect(event).toContain(`RELATED-TO;RELTYPE=PARENT:task-${parent.id}@task-service`);
    expect(ics.split('BEGIN:VEVENT').find((e) => e.includes(`UID:task-${parent.id}@`))).not.toContain('RELATED-TO');
  });
});

/** Coins the completions of these tasks recorded (what undo would take back), in order. */
async function awarded(...taskIds: string[]): Promise<number[]> {
  const { rows } = await system.pool.query<{ coins_awarded: number }>('SELECT coins_awarded FROM tasks.task_completions WHERE task_id = ANY($1) ORDER BY created_at', [taskIds]);
  return rows.map((r) => r.coins_awarded);
}
const complete = (as: string, id: string, body: Record<string, unknown> = {}) => api('POST', `/api/tasks/${id}/complete`, { as, body });
const undo = (as: string, id: string) => api('DELETE', `/api/tasks/${id}/complete`, { as });
const setAuto = (as: string, on: boolean) => api('PUT', '/api/settings/tasks', { as, body: { autoCompleteParent: on } });
/** A parent with subtasks made by the breakdown route. */
async function withSteps(as: string, parent: Record<string, unknown>, steps: string[]) {
  const p = await createTask(as, parent);
  const res = await api('POST', `/api/tasks/${p.id}/breakdown`, { as, body: { subtaskTitles: steps } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { parent: res.body.task, subs: res.body.subtasks as { id: string; title: string }[] };
}

describe('subtasks: the completion rules', () => {
  it('completing a parent with open subtasks is a 409 SUBTASKS_OPEN that changes nothing, unless completeSubtasks is sent', async () => {
    const ida = randomUUID();
    const { parent, subs } = await withSteps(ida, { title: 'Move house', coinValue: 4 }, ['pack', 'carry', 'unpack']);
    expect(parent).toMatchObject({ subtaskCount: 3, subtasksDone: 0 });
    const early = await complete(ida, subs[0]!.id);
    expect(early.body).toMatchObject({ coinsEarned: 0, parent: { allSubtasksDone: false, completed: false, task: { id: parent.id, subtaskCount: 3, subtasksDone: 1 } } });
    const refused = await complete(ida, parent.id);
    expectRefused(refused, 409, 'SUBTASKS_OPEN', 'body.completeSubtasks');
    expect(refused.body.message).toMatch(/2 subtasks are still open/);
    expect(await getTask(ida, parent.id)).toMatchObject({ completedAt: null, subtasksDone: 1 });
    expect(await awarded(parent.id)).toEqual([]);

    const done = await complete(ida, parent.id, { completeSubtasks: true });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ coinsEarned: 4, parent: null, task: { subtaskCount: 3, subtasksDone: 3 } });
    expect(done.body.task.completedAt).not.toBeNull();
    for (const sub of subs) expect((await getTask(ida, sub.id)).completedAt).not.toBeNull();
    expect(await awarded(...subs.map((x) => x.id), parent.id), 'the subtasks earned nothing, the parent its value once').toEqual([0, 0, 0, 4]);
    await eventFor('task.completed', subs[2]!.id);

    // undo takes back what that completion did: the subtasks completed with it reopen, the one done before stays done
    const back = await undo(ida, parent.id);
    expect(back.body).toMatchObject({ coinsRemoved: 4, task: { completedAt: null, subtasksDone: 1 } });
    expect((await getTask(ida, subs[0]!.id)).completedAt).not.toBeNull();
    expect((await getTask(ida, subs[1]!.id)).completedAt).toBeNull();
    expect(await awarded(...subs.map((x) => x.id), parent.id)).toEqual([0]);
  });

  it('completing the last open subtask offers the parent (the default), or completes it too with autoCompleteParent; undoing that subtask reopens both', async () => {
    const jo = randomUUID();
    expect((await api('GET', '/api/settings/tasks', { as: jo })).body).toEqual({ autoCompleteParent: false });
    const { parent, subs } = await withSteps(jo, { title: 'Bake', coinValue: 3 }, ['mix', 'bake']);
    await complete(jo, subs[0]!.id);
    const last = await complete(jo, subs[1]!.id);
    expect(last.body.parent).toMatchObject({ allSubtasksDone: true, completed: false, coinsEarned: 0, task: { id: parent.id, completedAt: null, subtasksDone: 2 } });
    expect((await getTask(jo, parent.id)).completedAt).toBeNull();
    await undo(jo, subs[1]!.id);

    expect((await setAuto(jo, true)).body).toEqual({ autoCompleteParent: true });
    expect((await api('GET', '/api/settings/profile', { as: jo })).body.profile.autoCompleteParent).toBe(true);
    const auto = await complete(jo, subs[1]!.id);
    expect(auto.body).toMatchObject({ coinsEarned: 0, parent: { allSubtasksDone: true, completed: true, coinsEarned: 3 } });
    expect(auto.body.parent.task.completedAt).not.toBeNull();
    await eventFor('task.completed', parent.id);
    const back = await undo(jo, subs[1]!.id);
    expect(back.body).toMatchObject({ coinsRemoved: 3, task: { completedAt: null } });
    expect(await getTask(jo, parent.id)).toMatchObject({ completedAt: null, subtasksDone: 1 });
    expect(await awarded(parent.id)).toEqual([]);
  });

  it('reopening a subtask of a completed parent reopens the parent (a parent is done only with all its subtasks)', async () => {
    const kai = randomUUID();
    const { parent, subs } = await withSteps(kai, { title: 'Garden', coinValue: 2 }, ['dig', 'plant']);
    await complete(kai, subs[0]!.id);
    await complete(kai, parent.id, { completeSubtasks: true });
    const back = await undo(kai, subs[0]!.id);
    expect(back.body.coinsRemoved).toBe(2);
    // the parent's completion is undone with everything it did: 'plant' was completed with it
    expect(await getTask(kai, parent.id)).toMatchObject({ completedAt: null, subtasksDone: 0 });
    expect((await getTask(kai, subs[1]!.id)).completedAt).toBeNull();
  });

  it("a recurring parent's subtasks start again when it recurs; undo puts them back as they were", async () => {
    const lou = randomUUID();
    await setAuto(lou, true);
    const { parent, subs } = await withSteps(lou, { title: 'Weekly clean', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 7, recurrenceFixed: true, dueDate: '2030-01-07', coinValue: 2 }, ['vacuum', 'dishes']);
    await complete(lou, subs[0]!.id);
    const last = await complete(lou, subs[1]!.id);
    expect(last.body.parent).toMatchObject({ completed: true, coinsEarned: 2, task: { nextDueDate: '2030-01-14', subtasksDone: 0, subtaskCount: 2 } });
    expect(last.body.task.completedAt, 'the subtask just done starts again with the next occurrence').toBeNull();
    for (const sub of subs) expect((await getTask(lou, sub.id)).completedAt).toBeNull();
    await until(() => eventsOf(subs[0]!.id).findLast((e) => e.payload.event === 'task.updated'), 'reset announced');

    const back = await undo(lou, subs[1]!.id);
    expect(back.body.coinsRemoved).toBe(2);
    expect(await getTask(lou, parent.id)).toMatchObject({ nextDueDate: '2030-01-07', subtasksDone: 1 });
    expect((await getTask(lou, subs[0]!.id)).completedAt, 'done before the occurrence was completed: done again').not.toBeNull();
    expect((await getTask(lou, subs[1]!.id)).completedAt).toBeNull();

    // completed with open subtasks when asked: they are done for this occurrence and open for the next
    const all = await complete(lou, parent.id, { completeSubtasks: true });
    expect(all.body.task).toMatchObject({ nextDueDate: '2030-01-14', subtasksDone: 0 });
    expect((await undo(lou, parent.id)).body.task).toMatchObject({ nextDueDate: '2030-01-07', subtasksDone: 1 });
  });

  it('breaking a task into ten pays what the task paid, not ten times: subtasks earn no coins and count toward no "tasks completed" achievement', async () => {
    const max = randomUUID();
    await setAuto(max, true);
    const steps = Array.from({ length: 10 }, (_, i) => `step ${i + 1}`);
    const { parent, subs } = await withSteps(max, { title: 'Big one', coinValue: 5 }, steps);
    const before = (await api('GET', '/api/settings/profile', { as: max })).body.profile.coins;
    let earned = 0;
    for (const sub of subs) {
      const r = await complete(max, sub.id);
      earned += r.body.coinsEarned + (r.body.parent?.coinsEarned ?? 0);
    }
    expect(earned).toBe(5);
    expect((await getTask(max, parent.id)).completedAt).not.toBeNull();
    expect(await awarded(...subs.map((x) => x.id), parent.id)).toEqual([...Array(10).fill(0), 5]);
    const achievements = (await api('GET', '/api/achievements', { as: max })).body.achievements as { key: string; unlocked: boolean; reward: number }[];
    expect(achievements.find((a) => a.key === 'tasks_1')?.unlocked, 'the parent is one task completed').toBe(true);
    expect(achievements.find((a) => a.key === 'tasks_10')?.unlocked, 'ten subtasks are not ten tasks').toBe(false);
    const after = (await api('GET', '/api/settings/profile', { as: max })).body.profile.coins;
    const achievementCoins = achievements.filter((a) => a.unlocked).reduce((n, a) => n + a.reward, 0);
    expect(after - before).toBe(5 + achievementCoins - 0);
  });

  it('bulk complete skips a parent with open subtasks, and completes one whose open subtasks are all in the request (subtasks first)', async () => {
    const nia = randomUUID();
    const a = await withSteps(nia, { title: 'A' }, ['a1', 'a2']);
    const b = await withSteps(nia, { title: 'B' }, ['b1', 'b2']);
    const res = await api('PATCH', '/api/tasks/bulk', { as: nia, body: { action: 'complete', taskIds: [a.parent.id, b.parent.id, b.subs[0]!.id, b.subs[1]!.id, a.subs[0]!.id] } });
    expect(res.body).toEqual({ success: true, affected: 4 });
    expect((await getTask(nia, a.parent.id)).completedAt).toBeNull();
    expect((await getTask(nia, b.parent.id)).completedAt).not.toBeNull();
    expect(await awarded(a.parent.id, b.parent.id, ...b.subs.map((x) => x.id)), 'bulk grants no coins').toEqual([0, 0, 0]);
  });
});

describe('subtasks: the daily quest picks the next subtask, never a parent with open subtasks', () => {
  it('the quest of a user whose only work is a task with steps is its first open step; completing it completes the quest', async () => {
    const quin = randomUUID();
    const { parent, subs } = await withSteps(quin, { title: 'Tidy the garage', dueDate: '2020-01-01' }, ['sort', 'sweep', 'shelve']);
    await complete(quin, subs[0]!.id);
    const quest = await api('GET', '/api/daily-quest', { as: quin });
    expect(quest.status).toBe(200);
    expect(quest.body.quest).toMatchObject({ id: subs[1]!.id, title: 'sweep' });
    expect(quest.body.quest.id).not.toBe(parent.id);
    expect((await getTask(quin, subs[1]!.id)).isDailyQuest).toBe(true);
    await complete(quin, subs[1]!.id);
    const after = (await api('GET', '/api/daily-quest', { as: quin })).body;
    expect(after).toMatchObject({ quest: { id: subs[1]!.id }, completed: true, tier: 'overdue' });
  });
});

describe('subtasks: their routes and the breakdown', () => {
  it('GET/POST /api/tasks/<id>/subtasks and PUT …/subtasks/reorder', async () => {
    const oli = randomUUID();
    const other = randomUUID();
    const topic = await newTopic(oli, { title: 'Trip' });
    const parent = await createTask(oli, { title: 'Plan the trip', topicId: topic.id });
    const added = await api('POST', `/api/tasks/${parent.id}/subtasks`, { as: oli, body: { title: 'Book train', dueDate: '2030-05-01' } });
    expect(added.status).toBe(201);
    expect(added.body.task).toMatchObject({ parentId: parent.id, topicId: topic.id, dueDate: '2030-05-01' });
    const hotel = (await api('POST', `/api/tasks/${parent.id}/subtasks`, { as: oli, body: { title: 'Book hotel' } })).body.task;
    const bag = (await api('POST', `/api/tasks/${parent.id}/subtasks`, { as: oli, body: { title: 'Pack' } })).body.task;
    const listed = async () => (await api('GET', `/api/tasks/${parent.id}/subtasks`, { as: oli })).body.tasks.map((t: { title: string }) => t.title);
    expect(await listed()).toEqual(['Book train', 'Book hotel', 'Pack']);
    expect((await api('PUT', `/api/tasks/${parent.id}/subtasks/reorder`, { as: oli, body: { taskIds: [bag.id, hotel.id, added.body.task.id] } })).body).toEqual({ success: true });
    expect(await listed()).toEqual(['Pack', 'Book hotel', 'Book train']);
    // not its subtask, another user's, a subtask as parent: refused, nothing changed
    const loose = await createTask(oli, { title: 'Loose' });
    expectRefused(await api('PUT', `/api/tasks/${parent.id}/subtasks/reorder`, { as: oli, body: { taskIds: [loose.id] } }), 404, 'TASKS_NOT_FOUND', 'body.taskIds');
    expect((await api('GET', `/api/tasks/${parent.id}/subtasks`, { as: other })).status).toBe(404);
    expect((await api('POST', `/api/tasks/${parent.id}/subtasks`, { as: other, body: { title: 'x' } })).body.code).toBe('TASKS_NOT_FOUND');
    expectRefused(await api('POST', `/api/tasks/${bag.id}/subtasks`, { as: oli, body: { title: 'x' } }), 400, 'VALIDATION_FAILED', 'params.id');
    expectRefused(await api('POST', `/api/tasks/${parent.id}/subtasks`, { as: oli, body: { title: 'x', type: 'RECURRING' } }), 400, 'VALIDATION_FAILED', 'body.type');
    expect(await listed()).toEqual(['Pack', 'Book hotel', 'Book train']);
  });

  it('breakdown splits a task into 2–10 subtasks, in order, with its priority; refuses a subtask, a completed task, too few or too many', async () => {
    const pia = randomUUID();
    const other = randomUUID();
    const parent = await createTask(pia, { title: 'Write the thesis', priority: 'HIGH', energyLevel: 'HIGH' });
    const res = await api('POST', `/api/tasks/${parent.id}/breakdown`, { as: pia, body: { subtaskTitles: ['outline', 'draft', 'revise'] } });
    expect(res.status).toBe(201);
    expect(res.body.task).toMatchObject({ id: parent.id, subtaskCount: 3, subtasksDone: 0, parentId: null });
    expect(res.body.subtasks.map((t: { title: string; priority: string; energyLevel: string; parentId: string }) => [t.title, t.priority, t.energyLevel, t.parentId])).toEqual([
      ['outline', 'HIGH', 'HIGH', parent.id],
      ['draft', 'HIGH', 'HIGH', parent.id],
      ['revise', 'HIGH', 'HIGH', parent.id],
    ]);
    for (const t of res.body.subtasks) await eventFor('task.created', t.id);
    const post = (id: string, titles: unknown, as = pia) => api('POST', `/api/tasks/${id}/breakdown`, { as, body: { subtaskTitles: titles } });
    expectRefused(await post(parent.id, ['only one']), 400, 'VALIDATION_FAILED', 'body.subtaskTitles');
    expectRefused(await post(parent.id, Array.from({ length: 11 }, (_, i) => `s${i}`)), 400, 'VALIDATION_FAILED', 'body.subtaskTitles');
    expectRefused(await post(parent.id, ['ok', '']), 400, 'VALIDATION_FAILED', 'body.subtaskTitles.1');
    expectRefused(await post(res.body.subtasks[0].id, ['a', 'b']), 400, 'VALIDATION_FAILED', 'params.id');
    expect((await post(parent.id, ['a', 'b'], other)).status).toBe(404);
    const done = await createTask(pia, { title: 'Done already' });
    await complete(pia, done.id);
    expect((await post(done.id, ['a', 'b'])).body.code).toBe('ALREADY_COMPLETED');
    expectRefused(await api('POST', '/api/tasks', { as: pia, body: { title: 'late step', parentId: done.id } }), 409, 'ALREADY_COMPLETED', 'body.parentId');
    // at most 50 subtasks: 3 + 4 × 10 = 43, so 10 more would make 53
    for (let i = 0; i < 4; i++) expect((await post(parent.id, Array.from({ length: 10 }, (_, j) => `batch ${i}.${j}`))).status).toBe(201);
    expectRefused(await post(parent.id, Array.from({ length: 10 }, (_, j) => `over ${j}`)), 400, 'VALIDATION_FAILED', 'body.subtaskTitles');
    expect((await getTask(pia, parent.id)).subtaskCount).toBe(43);
  });
});

describe('promote to topic', () => {
  it('turns a task into a topic: its subtasks become the topic’s tasks in order (sequential when asked), the task is gone; events say so', async () => {
    const rae = randomUUID();
    const home = await newTopic(rae, { title: 'Home' });
    const parent = await createTask(rae, { title: 'Renovate the kitchen', notes: 'before the visit', priority: 'HIGH', energyLevel: 'LOW', topicId: home.id });
    const steps = (await api('POST', `/api/tasks/${parent.id}/breakdown`, { as: rae, body: { subtaskTitles: ['measure', 'order cabinets', 'fit'] } })).body.subtasks;
    expect((await complete(rae, steps[0].id)).status).toBe(200);
    const res = await api('POST', `/api/tasks/${parent.id}/promote-to-topic`, { as: rae, body: { sequential: true } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.topic).toMatchObject({ title: 'Renovate the kitchen', description: 'before the visit', priority: 'HIGH', defaultEnergyLevel: 'LOW', sequential: true, taskCount: 3, openTaskCount: 2 });
    const topicId = res.body.topic.id;
    // in order; the first open one is workable, the next waits its turn
    expect(res.body.tasks.map((t: { title: string; parentId: string | null; topicId: string; blocked: boolean; completedAt: string | null }) => [t.title, t.parentId, t.topicId, t.blocked, t.completedAt !== null])).toEqual([
      ['measure', null, topicId, false, true],
      ['order cabinets', null, topicId, false, false],
      ['fit', null, topicId, true, false],
    ]);
    expect((await api('GET', `/api/tasks/${parent.id}`, { as: rae })).status).toBe(404);
    expect((await api('GET', `/api/topics/${topicId}`, { as: rae })).body.tasks.map((t: { id: string }) => t.id)).toEqual(steps.map((s: { id: string }) => s.id));
    for (const s of steps) expect((await eventFor('task.updated', s.id)).payload.task).toMatchObject({ parentId: null, topicId });
    expect((await eventFor('task.deleted', parent.id)).payload.task).toMatchObject({ id: parent.id, title: 'Renovate the kitchen' });
    expect(await counts(rae)).toEqual({ kept: 3, n: 3 });
  });

  it('undo puts the task back (same id and fields) with its subtasks and removes the topic; once, within the window, while the topic holds only them', async () => {
    const sam = randomUUID();
    const other = randomUUID();
    const home = await newTopic(sam, { title: 'Home' });
    const parent = await createTask(sam, { title: 'Move house', notes: 'in May', dueDate: '2031-05-01', dueTime: '09:30', topicId: home.id });
    const steps = (await api('POST', `/api/tasks/${parent.id}/breakdown`, { as: sam, body: { subtaskTitles: ['boxes', 'van', 'keys'] } })).body.subtasks;
    await complete(sam, steps[1].id);
    const promoted = (await api('POST', `/api/tasks/${parent.id}/promote-to-topic`, { as: sam })).body;
    expect(promoted.topic.sequential).toBe(false);
    // another user cannot undo it, nor can a task that was never promoted be "undone"
    expect((await api('DELETE', `/api/tasks/${parent.id}/promote-to-topic`, { as: other })).status).toBe(404);
    expect((await api('DELETE', `/api/tasks/${steps[0].id}/promote-to-topic`, { as: sam })).body.code).toBe('TASKS_NOT_FOUND');
    // a step deleted meanwhile stays deleted
    expect((await api('DELETE', `/api/tasks/${steps[2].id}`, { as: sam })).status).toBe(200);
    const undo = await api('DELETE', `/api/tasks/${parent.id}/promote-to-topic`, { as: sam });
    expect(undo.status, JSON.stringify(undo.body)).toBe(200);
    expect(undo.body.task).toMatchObject({ id: parent.id, title: 'Move house', notes: 'in May', dueDate: '2031-05-01', dueTime: '09:30', topicId: home.id, parentId: null, subtaskCount: 2, subtasksDone: 1, createdAt: parent.createdAt });
    expect(undo.body.subtasks.map((t: { id: string; parentId: string; topicId: string }) => [t.id, t.parentId, t.topicId])).toEqual([
      [steps[0].id, parent.id, home.id],
      [steps[1].id, parent.id, home.id],
    ]);
    expect((await api('GET', `/api/topics/${promoted.topic.id}`, { as: sam })).status).toBe(404);
    // the task's second task.created (the first was its creation), each subtask's task.updated back under it
    await until(() => eventsOf(parent.id).filter((e) => e.payload.event === 'task.created').length === 2 || undefined, 'the restored task.created');
    expect(eventsOf(parent.id).at(-1)!.payload.task).toMatchObject({ id: parent.id, parentId: null, topicId: home.id });
    for (const s of steps.slice(0, 2)) await until(() => eventsOf(s.id).find((e) => e.payload.event === 'task.updated' && e.payload.task.parentId === parent.id && e.payload.task.topicId === home.id), `${s.title} back`);
    expect(await counts(sam)).toEqual({ kept: 3, n: 3 });
    // the rules hold again: the parent is not completed by accident
    expect((await complete(sam, parent.id)).body.code).toBe('SUBTASKS_OPEN');
    // once only
    expect((await api('DELETE', `/api/tasks/${parent.id}/promote-to-topic`, { as: sam })).status).toBe(404);
  });

  it('undo is refused when the topic took other tasks (409) or the window has passed (404), changing nothing', async () => {
    const tia = randomUUID();
    const parent = await createTask(tia, { title: 'Garden' });
    await api('POST', `/api/tasks/${parent.id}/breakdown`, { as: tia, body: { subtaskTitles: ['dig', 'plant'] } });
    const { topic } = (await api('POST', `/api/tasks/${parent.id}/promote-to-topic`, { as: tia })).body;
    const added = await createTask(tia, { title: 'water', topicId: topic.id });
    const undo = () => api('DELETE', `/api/tasks/${parent.id}/promote-to-topic`, { as: tia });
    expect((await undo()).body.code).toBe('CONFLICT');
    expect((await api('GET', `/api/topics/${topic.id}`, { as: tia })).body.tasks).toHaveLength(3);
    expect((await api('PATCH', `/api/tasks/${added.id}`, { as: tia, body: { topicId: null } })).status).toBe(200);
    await system.pool.query(`UPDATE tasks.topics SET created_at = now() - interval '11 minutes' WHERE id = $1`, [topic.id]);
    expect((await undo()).status).toBe(404);
    expect((await api('GET', `/api/tasks/${parent.id}`, { as: tia })).status).toBe(404);
    expect(await counts(tia)).toEqual({ kept: 3, n: 3 });
  });

  it('refuses a subtask, a recurring task (400 params.id), a completed task (409) and another user’s (404), changing nothing; a task without subtasks makes an empty topic', async () => {
    const uma = randomUUID();
    const other = randomUUID();
    const parent = await createTask(uma, { title: 'Parent' });
    const sub = await createTask(uma, { title: 'Sub', parentId: parent.id });
    const recurring = await createTask(uma, { title: 'Water plants', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 3 });
    const done = await createTask(uma, { title: 'Done' });
    await complete(uma, done.id);
    const promote = (id: string, as = uma, body?: unknown) => api('POST', `/api/tasks/${id}/promote-to-topic`, { as, body });
    expectRefused(await promote(sub.id), 400, 'VALIDATION_FAILED', 'params.id');
    expectRefused(await promote(recurring.id), 400, 'VALIDATION_FAILED', 'params.id');
    expect((await promote(done.id)).body.code).toBe('ALREADY_COMPLETED');
    expect((await promote(parent.id, other)).status).toBe(404);
    expectRefused(await promote(parent.id, uma, { sequential: 'yes' }), 400, 'VALIDATION_FAILED', 'body.sequential');
    expect((await api('GET', '/api/topics', { as: uma })).body.topics).toEqual([]);
    expect((await getTask(uma, sub.id)).parentId).toBe(parent.id);
    const alone = await createTask(uma, { title: 'x'.repeat(150) });
    const res = await promote(alone.id);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ topic: { title: `${'x'.repeat(99)}…`, taskCount: 0 }, tasks: [] });
  });
});
