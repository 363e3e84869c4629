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
    await api('POST', `/api/tasks/${first.id}/complete`, { as: hal });
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
