import { randomUUID } from 'node:crypto';
import ICAL from 'ical.js';
import { TASK_EVENTS_FILTER, taskEvent, taskEvents, tasksRoutes, type TaskEventMessage } from '@tasksvc/proto';
import { createNatsBus, type Bus, type Subscription } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { quietLogger, startNats, testSystemConfig, until, type LocalNats } from '../../../tools/testenv/index.ts';
import { apiClient, serveTestIdentities } from '../test/support.ts';
import { tasksService } from './service.ts';

/**
 * The tasks REST API end to end: HTTP → gateway → bus → tasks service → PostgreSQL, with task
 * events read back from the durable event stream; run once over NATS (JetStream) and once over the
 * in-process bus. Identity comes from a TEST DOUBLE of auth.identity.resolve. A private
 * nats-server keeps this file's subjects away from other test files.
 */

let nats: LocalNats;
let system: RunningSystem;
let identity: Subscription;
let observer: Bus;
const events: TaskEventMessage[] = [];
let api: ReturnType<typeof apiClient>;

const alice = randomUUID();
const bob = randomUUID();

/** Coins recorded on a task's completion rows (what an undo would take back). */
async function awarded(taskId: string): Promise<number[]> {
  const { rows } = await system.pool.query<{ coins_awarded: number }>('SELECT coins_awarded FROM tasks.task_completions WHERE task_id = $1 ORDER BY created_at', [taskId]);
  return rows.map((r) => r.coins_awarded);
}

const eventFor = (name: string, id: string) => until(() => events.find((e) => e.payload.event === name && e.payload.task.id === id), `${name} of ${id}`);

/** A date `days` from today in UTC, every test user's default timezone. */
const addDaysUtc = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
const tomorrow = () => addDaysUtc(1);

async function createTask(as: string, body: Record<string, unknown>) {
  const res = await api('POST', '/api/tasks', { as, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task;
}

describe.each([{ transport: 'NATS' }, { transport: 'in-process bus' }])('tasks API over HTTP (gateway + $transport + Postgres; identity test double)', ({ transport }) => {
  let onNats = false;
  beforeAll(async () => {
    events.length = 0;
    onNats = transport === 'NATS';
    if (onNats) nats = await startNats();
    const config = await testSystemConfig({ NATS_URL: onNats ? nats.url : undefined, PUBLIC_APP_URL: 'https://tasks.example.test' });
    system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
    identity = serveTestIdentities(system.bus);
    observer = onNats ? await createNatsBus({ servers: nats.url, name: 'observer', log: quietLogger() }) : system.bus;
    await observer.consume(taskEvents['task.created'], async (m) => void events.push(m), { durable: 'http-test-observer', filter: TASK_EVENTS_FILTER });
    api = apiClient(system.url);
  });

  afterAll(async () => {
    await identity?.stop();
    if (onNats) await observer?.close();
    await system?.stop();
    if (onNats) await nats?.stop();
  });

  it('every tasks route refuses anonymous callers (401) except the iCal feed', async () => {
    for (const route of tasksRoutes) {
      const path = route.path.replace(':id', randomUUID()).replace(':file', `ts_cal_${'A'.repeat(43)}.ics`);
      const res = await api(route.method, path, { body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {} });
      if (route.auth === 'none') expect(res.status, `${route.method} ${route.path}`).toBe(404);
      else {
        expect(res.status, `${route.method} ${route.path}`).toBe(401);
        expect(res.body.code).toBe('UNAUTHENTICATED');
      }
    }
  });

  it('a read-only key may read but every write route answers 403 READ_ONLY_KEY', async () => {
    for (const route of tasksRoutes.filter((r) => r.auth === 'user')) {
      const path = route.path.replace(':id', randomUUID());
      const res = await api(route.method, path, { as: alice, ro: true, body: route.method === 'GET' || route.method === 'DELETE' ? undefined : {} });
      if (route.method === 'GET') expect(res.status, `${route.method} ${route.path}`).not.toBe(403);
      else {
        expect(res.status, `${route.method} ${route.path}`).toBe(403);
        expect(res.body.code).toBe('READ_ONLY_KEY');
      }
    }
    expect((await api('GET', '/api/tasks', { as: alice, ro: true })).status).toBe(200);
  });

  it('creates a task (201, full shape) and emits task.created with the spec payload: the task as the API shows it, mapped', async () => {
    const t = await createTask(alice, { title: 'Write report', dueDate: '2026-12-01', priority: 'HIGH', notes: 'n', estimatedMinutes: 30, energyLevel: 'LOW', coinValue: 3 });
    expect(t).toMatchObject({ title: 'Write report', type: 'ONE_TIME', priority: 'HIGH', dueDate: '2026-12-01', completedAt: null, topicId: null, parentId: null, coinValue: 3, postponeCount: 0, userId: alice, blocked: false });
    const e = await eventFor('task.created', t.id);
    expect(e.userId).toBe(alice);
    expect(Object.keys(e.payload).sort()).toEqual(['event', 'task', 'timestamp']);
    // the spec's fields, and whatever else the task carries that events carry (the one mapper: taskEvent)
    expect(e.payload.task).toMatchObject({ id: t.id, title: 'Write report', type: 'ONE_TIME', priority: 'HIGH', topicId: null, parentId: null, dueDate: '2026-12-01', completedAt: null, createdAt: t.createdAt });
    expect(e.payload.task).toEqual(taskEvent('task.created', t).payload.task);
    expect(Number.isNaN(Date.parse(e.payload.timestamp))).toBe(false);
  });

  it('rejects bad input with 400 naming the field', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/api/tasks', {}, 'body.title'],
      ['POST', '/api/tasks', { title: '' }, 'body.title'],
      ['POST', '/api/tasks', { title: 'x'.repeat(256) }, 'body.title'],
      ['POST', '/api/tasks', { title: 'a', sneaky: 1 }, 'body'],
      ['POST', '/api/tasks', { title: 'a', dueDate: '2026-02-30' }, 'body.dueDate'],
      ['POST', '/api/tasks', { title: 'a', type: 'SOMETIMES' }, 'body.type'],
      ['POST', '/api/tasks', { title: 'a', recurrenceType: 'MONTHLY' }, 'body.recurrenceType'],
      ['POST', '/api/tasks', { title: 'a', type: 'RECURRING', recurrenceType: 'WEEKDAY' }, 'body.recurrenceWeekdays'],
      ['POST', '/api/tasks', { title: 'a', type: 'RECURRING', recurrenceType: 'NTH_WEEKDAY', recurrenceWeekdays: [4] }, 'body.recurrenceWeekOfMonth'],
      ['POST', '/api/tasks', { title: 'a', type: 'RECURRING', recurrenceType: 'YEARLY', recurrenceInterval: 11 }, 'body.recurrenceInterval'],
      ['POST', '/api/tasks', { title: 'a', topicId: 'nope' }, 'body.topicId'],
      ['GET', '/api/tasks?limit=100000', undefined, 'query.limit'],
      ['GET', '/api/tasks?completed=maybe', undefined, 'query.completed'],
      ['GET', '/api/tasks/not-a-uuid', undefined, 'params.id'],
      ['PATCH', '/api/tasks/bulk', { action: 'explode', taskIds: [] }, 'body.action'],
      ['PATCH', '/api/tasks/bulk', { action: 'delete', taskIds: Array.from({ length: 201 }, () => randomUUID()) }, 'body.taskIds'],
      ['POST', '/api/topics', { title: 'T', color: 'red' }, 'body.color'],
      ['PATCH', '/api/settings/timezone', { timezone: 'Mars/Olympus' }, 'body.timezone'],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await api(method, path, { as: alice, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.issues.map((i: { path: string }) => i.path), `${method} ${path}`).toContain(field);
    }
  });

  it('every route rejects a malformed id (params.id) and unknown body fields (strict bodies) with 400', async () => {
    for (const route of tasksRoutes.filter((r) => r.auth === 'user')) {
      const hasBody = route.method !== 'GET' && route.method !== 'DELETE';
      if (route.path.includes(':id')) {
        const res = await api(route.method, route.path.replace(':id', 'not-a-uuid'), { as: alice, body: hasBody ? {} : undefined });
        expect(res.status, `${route.method} ${route.path}`).toBe(400);
        expect(res.body.issues.map((i: { path: string }) => i.path), `${route.method} ${route.path}`).toContain('params.id');
      }
      if (hasBody) {
        const res = await api(route.method, route.path.replace(':id', randomUUID()), { as: alice, body: { unexpected: true } });
        expect(res.status, `${route.method} ${route.path}`).toBe(400);
        expect(res.body.code).toBe('VALIDATION_FAILED');
      }
    }
  });

  it("every by-id route answers 404 for another user's task or topic, and changes nothing", async () => {
    const t = await createTask(alice, { title: 'Private', dueDate: '2026-12-02' });
    const topic = (await api('POST', '/api/topics', { as: alice, body: { title: 'Secret topic' } })).body.topic;
    const tries: [string, string, unknown, string][] = [
      ['GET', `/api/tasks/${t.id}`, undefined, 'TASKS_NOT_FOUND'],
      ['PATCH', `/api/tasks/${t.id}`, { title: 'mine now' }, 'TASKS_NOT_FOUND'],
      ['DELETE', `/api/tasks/${t.id}`, undefined, 'TASKS_NOT_FOUND'],
      ['POST', `/api/tasks/${t.id}/complete`, {}, 'TASKS_NOT_FOUND'],
      ['DELETE', `/api/tasks/${t.id}/complete`, undefined, 'TASKS_NOT_FOUND'],
      ['POST', `/api/tasks/${t.id}/snooze`, { snoozedUntil: '2099-01-01' }, 'TASKS_NOT_FOUND'],
      ['DELETE', `/api/tasks/${t.id}/snooze`, undefined, 'TASKS_NOT_FOUND'],
      ['POST', `/api/tasks/${t.id}/postpone`, {}, 'TASKS_NOT_FOUND'],
      ['GET', `/api/topics/${topic.id}`, undefined, 'TOPICS_NOT_FOUND'],
      ['PATCH', `/api/topics/${topic.id}`, { title: 'x' }, 'TOPICS_NOT_FOUND'],
      ['DELETE', `/api/topics/${topic.id}`, undefined, 'TOPICS_NOT_FOUND'],
      ['PUT', `/api/topics/${topic.id}/reorder`, { taskIds: [t.id] }, 'TOPICS_NOT_FOUND'],
      ['PUT', '/api/topics/reorder', { topicIds: [topic.id] }, 'TOPICS_NOT_FOUND'],
      ['POST', '/api/tasks', { title: 'into their topic', topicId: topic.id }, 'TOPICS_NOT_FOUND'],
    ];
    for (const [method, path, body, code] of tries) {
      const res = await api(method, path, { as: bob, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code, `${method} ${path}`).toBe(code);
    }
    // Bob's own topic and task cannot be tied to Alice's objects either.
    const bobTopic = (await api('POST', '/api/topics', { as: bob, body: { title: 'Bob topic' } })).body.topic;
    const bobTask = await createTask(bob, { title: 'Bob task', topicId: bobTopic.id });
    const reorderForeign = await api('PUT', `/api/topics/${bobTopic.id}/reorder`, { as: bob, body: { taskIds: [bobTask.id, t.id] } });
    expect([reorderForeign.status, reorderForeign.body.code]).toEqual([404, 'TASKS_NOT_FOUND']);
    const moveToForeign = await api('PATCH', `/api/tasks/${bobTask.id}`, { as: bob, body: { topicId: topic.id } });
    expect([moveToForeign.status, moveToForeign.body.code]).toEqual([404, 'TOPICS_NOT_FOUND']);
    const bulkForeignTopic = await api('PATCH', '/api/tasks/bulk', { as: bob, body: { action: 'changeTopic', taskIds: [bobTask.id], topicId: topic.id } });
    expect([bulkForeignTopic.status, bulkForeignTopic.body.code]).toEqual([404, 'TOPICS_NOT_FOUND']);
    const bulk = await api('PATCH', '/api/tasks/bulk', { as: bob, body: { action: 'delete', taskIds: [t.id] } });
    expect(bulk.body).toEqual({ success: true, affected: 0 });
    expect((await api('GET', '/api/tasks', { as: bob })).body.tasks.map((x: { id: string }) => x.id)).toEqual([bobTask.id]);
    const still = await api('GET', `/api/tasks/${t.id}`, { as: alice });
    expect(still.body.task).toMatchObject({ title: 'Private', completedAt: null, snoozedUntil: null, postponeCount: 0 });
    expect((await api('GET', `/api/topics/${topic.id}`, { as: alice })).body.topic.title).toBe('Secret topic');
  });

  it('lists with filters and bounded pagination', async () => {
    const carol = randomUUID();
    for (let i = 0; i < 5; i++) await createTask(carol, { title: `t${i}`, priority: i % 2 ? 'HIGH' : 'SOMEDAY', dueDate: `2026-12-1${i}` });
    const page = await api('GET', '/api/tasks?limit=2&offset=1', { as: carol });
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(page.body.tasks.map((t: { title: string }) => t.title)).toEqual(['t1', 't2']);
    expect((await api('GET', '/api/tasks?priority=HIGH', { as: carol })).body.tasks.map((t: { title: string }) => t.title)).toEqual(['t1', 't3']);
    expect((await api('GET', '/api/tasks?dueBefore=2026-12-11&dueAfter=2026-12-11', { as: carol })).body.tasks.map((t: { title: string }) => t.title)).toEqual(['t1']);
    expect((await api('GET', '/api/tasks?offset=50', { as: carol })).body).toMatchObject({ tasks: [], total: 5 });
    expect((await api('GET', '/api/tasks?topicId=none&completed=false&type=ONE_TIME', { as: carol })).body.total).toBe(5);
  });

  it('PATCH edits fields and emits task.updated; DELETE removes and emits task.deleted', async () => {
    const t = await createTask(alice, { title: 'Edit me' });
    const res = await api('PATCH', `/api/tasks/${t.id}`, { as: alice, body: { title: 'Edited', priority: 'SOMEDAY', dueDate: '2027-01-05' } });
    expect(res.status).toBe(200);
    expect(res.body.task).toMatchObject({ title: 'Edited', priority: 'SOMEDAY', dueDate: '2027-01-05' });
    expect((await eventFor('task.updated', t.id)).payload.task).toMatchObject({ title: 'Edited', priority: 'SOMEDAY', dueDate: '2027-01-05', completedAt: null });
    const del = await api('DELETE', `/api/tasks/${t.id}`, { as: alice });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await eventFor('task.deleted', t.id)).payload.task.title).toBe('Edited');
    expect((await api('GET', `/api/tasks/${t.id}`, { as: alice })).status).toBe(404);
  });

  it('completes once (a second completion is 409), grants coins, and undo takes back exactly those coins', async () => {
    const dave = randomUUID();
    const t = await createTask(dave, { title: 'Once', coinValue: 4 });
    const done = await api('POST', `/api/tasks/${t.id}/complete`, { as: dave });
    expect(done.status).toBe(200);
    // The balance may also hold achievement coins granted by the game hooks; the completion's own grant is exact.
    expect(done.body.coinsEarned).toBe(4);
    expect(done.body.coins).toBeGreaterThanOrEqual(4);
    expect(done.body.task.completedAt).not.toBeNull();
    const completed = await eventFor('task.completed', t.id);
    expect(completed.payload.task.completedAt).toBe(done.body.task.completedAt);
    const again = await api('POST', `/api/tasks/${t.id}/complete`, { as: dave });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('ALREADY_COMPLETED');
    const undo = await api('DELETE', `/api/tasks/${t.id}/complete`, { as: dave });
    expect(undo.status).toBe(200);
    expect(undo.body.coinsRemoved).toBe(4);
    expect(done.body.coins - undo.body.coins).toBeGreaterThanOrEqual(4);
    expect(await awarded(t.id)).toEqual([]);
    expect(undo.body.task.completedAt).toBeNull();
    expect((await api('DELETE', `/api/tasks/${t.id}/complete`, { as: dave })).status).toBe(409);
    // Refused changes roll back with their events: one completion, one undo, nothing from the 409s.
    await until(() => (events.filter((e) => e.payload.task.id === t.id).length >= 3 ? true : undefined), 'events of the completion test');
    await new Promise((r) => setTimeout(r, 300));
    expect(events.filter((e) => e.payload.task.id === t.id).map((e) => e.payload.event)).toEqual(['task.created', 'task.completed', 'task.updated']);
  });

  it('doubles coins after 3 postponements, and undo removes the doubled amount', async () => {
    const erin = randomUUID();
    const t = await createTask(erin, { title: 'Procrastinated', coinValue: 2 });
    for (let i = 1; i <= 3; i++) {
      const p = await api('POST', `/api/tasks/${t.id}/postpone`, { as: erin });
      expect(p.status).toBe(200);
      expect(p.body.task.postponeCount).toBe(i);
      // An undated task is hidden until tomorrow but stays undated.
      expect(p.body.task).toMatchObject({ snoozedUntil: tomorrow(), dueDate: null });
    }
    const done = await api('POST', `/api/tasks/${t.id}/complete`, { as: erin });
    expect(done.body.coinsEarned).toBe(4);
    expect(await awarded(t.id)).toEqual([4]);
    const undo = await api('DELETE', `/api/tasks/${t.id}/complete`, { as: erin });
    expect(undo.body.coinsRemoved).toBe(4);
    expect(done.body.coins - undo.body.coins).toBeGreaterThanOrEqual(4);
    expect((await api('GET', '/api/settings/profile', { as: erin })).body.profile).toMatchObject({ coins: undo.body.coins, totalTasksCreated: 1, timezone: 'UTC' });
  });

  it('postpone never brings a due date forward: a later deadline stays, an earlier one moves to tomorrow', async () => {
    const later = await createTask(alice, { title: 'Due next week', dueDate: addDaysUtc(7) });
    const p = await api('POST', `/api/tasks/${later.id}/postpone`, { as: alice });
    expect(p.status).toBe(200);
    expect(p.body.task).toMatchObject({ dueDate: addDaysUtc(7), snoozedUntil: tomorrow(), postponeCount: 1 });
    const due = await createTask(alice, { title: 'Due today', dueDate: addDaysUtc(0) });
    expect((await api('POST', `/api/tasks/${due.id}/postpone`, { as: alice })).body.task).toMatchObject({ dueDate: tomorrow(), snoozedUntil: tomorrow() });
  });

  it('of concurrent completions of one task exactly one succeeds', async () => {
    const t = await createTask(alice, { title: 'Race' });
    const results = await Promise.all(Array.from({ length: 6 }, () => api('POST', `/api/tasks/${t.id}/complete`, { as: alice })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
  });

  it('completing a RECURRING task advances nextDueDate (completedAt stays null) and undo restores it', async () => {
    const t = await createTask(alice, { title: 'Water plants', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 3, recurrenceFixed: true, dueDate: '2030-01-10' });
    expect(t).toMatchObject({ nextDueDate: '2030-01-10', recurrenceType: 'INTERVAL', recurrenceInterval: 3, recurrenceFixed: true });
    const done = await api('POST', `/api/tasks/${t.id}/complete`, { as: alice });
    expect(done.status).toBe(200);
    expect(done.body.task).toMatchObject({ nextDueDate: '2030-01-13', completedAt: null });
    const e = await eventFor('task.completed', t.id);
    expect(e.payload.task).toMatchObject({ dueDate: '2030-01-10', type: 'RECURRING' });
    expect(e.payload.task.completedAt).not.toBeNull();
    const twice = await api('POST', `/api/tasks/${t.id}/complete`, { as: alice });
    expect(twice.body.task.nextDueDate).toBe('2030-01-16');
    await api('DELETE', `/api/tasks/${t.id}/complete`, { as: alice });
    const undone = await api('DELETE', `/api/tasks/${t.id}/complete`, { as: alice });
    expect(undone.body.task.nextDueDate).toBe('2030-01-10');
    const weekly = await createTask(alice, { title: 'Every Friday', type: 'RECURRING', recurrenceType: 'WEEKDAY', recurrenceWeekdays: [4], dueDate: '2030-01-07' });
    expect(weekly.nextDueDate).toBe('2030-01-11'); // the first Friday on or after the Monday it starts
    const patched = await api('PATCH', `/api/tasks/${weekly.id}`, { as: alice, body: { recurrenceType: 'NTH_WEEKDAY', recurrenceWeekOfMonth: -1 } });
    expect(patched.body.task).toMatchObject({ recurrenceType: 'NTH_WEEKDAY', recurrenceWeekOfMonth: -1, nextDueDate: '2030-01-25' });
    const oneOff = await api('PATCH', `/api/tasks/${weekly.id}`, { as: alice, body: { type: 'ONE_TIME' } });
    expect(oneOff.status).toBe(200);
    expect(oneOff.body.task).toMatchObject({ type: 'ONE_TIME', recurrenceType: null, recurrenceWeekdays: null, nextDueDate: null, dueDate: '2030-01-07' });
  });

  it("snooze needs a date after today in the user's timezone; unsnooze clears it", async () => {
    const t = await createTask(alice, { title: 'Snoozy' });
    const past = await api('POST', `/api/tasks/${t.id}/snooze`, { as: alice, body: { snoozedUntil: '2020-01-01' } });
    expect(past.status).toBe(400);
    expect(past.body.issues[0].path).toBe('body.snoozedUntil');
    const ok = await api('POST', `/api/tasks/${t.id}/snooze`, { as: alice, body: { snoozedUntil: '2099-01-01' } });
    expect(ok.status).toBe(200);
    expect(ok.body.task.snoozedUntil).toBe('2099-01-01');
    expect((await api('GET', '/api/tasks?snoozed=false', { as: alice })).body.tasks.some((x: { id: string }) => x.id === t.id)).toBe(false);
    expect((await api('DELETE', `/api/tasks/${t.id}/snooze`, { as: alice })).body.task.snoozedUntil).toBeNull();
  });

  it('bulk actions: setPriority, changeTopic, complete (recurring skipped, no coins), delete', async () => {
    const frank = randomUUID();
    const a = await createTask(frank, { title: 'a' });
    const b = await createTask(frank, { title: 'b', coinValue: 5 });
    const r = await createTask(frank, { title: 'r', type: 'RECURRING' });
    const topic = (await api('POST', '/api/topics', { as: frank, body: { title: 'Home' } })).body.topic;
    const ids = [a.id, b.id, r.id];
    expect((await api('PATCH', '/api/tasks/bulk', { as: frank, body: { action: 'setPriority', taskIds: ids, priority: 'HIGH' } })).body).toEqual({ success: true, affected: 3 });
    expect((await api('PATCH', '/api/tasks/bulk', { as: frank, body: { action: 'changeTopic', taskIds: ids, topicId: topic.id } })).body.affected).toBe(3);
    expect((await api('PATCH', '/api/tasks/bulk', { as: frank, body: { action: 'complete', taskIds: ids } })).body.affected).toBe(2);
    expect([...(await awarded(a.id)), ...(await awarded(b.id)), ...(await awarded(r.id))]).toEqual([0, 0]);
    const list = (await api('GET', `/api/tasks?topicId=${topic.id}`, { as: frank })).body.tasks;
    expect(list.map((t: { priority: string }) => t.priority)).toEqual(['HIGH', 'HIGH', 'HIGH']);
    expect(list.filter((t: { completedAt: string | null }) => t.completedAt).length).toBe(2);
    expect((await api('PATCH', '/api/tasks/bulk', { as: frank, body: { action: 'delete', taskIds: ids } })).body.affected).toBe(3);
    expect((await api('GET', '/api/tasks', { as: frank })).body.total).toBe(0);
  });

  it('topics: CRUD with counts, reorder, sequential topics block all but the first open task, delete keeps tasks', async () => {
    const gina = randomUUID();
    const t1 = (await api('POST', '/api/topics', { as: gina, body: { title: 'One', color: '#ff8800', icon: 'star' } })).body.topic;
    const t2res = await api('POST', '/api/topics', { as: gina, body: { title: 'Two', sequential: true, priority: 'HIGH' } });
    expect(t2res.status).toBe(201);
    const t2 = t2res.body.topic;
    expect(t2).toMatchObject({ title: 'Two', sequential: true, priority: 'HIGH', archived: false, taskCount: 0, openTaskCount: 0 });
    const x = await createTask(gina, { title: 'x', topicId: t2.id });
    const y = await createTask(gina, { title: 'y', topicId: t2.id });
    const z = await createTask(gina, { title: 'z', topicId: t2.id });
    expect([x.blocked, y.blocked, z.blocked], 'the create answers with blocked computed').toEqual([false, true, true]);
    let tasks = (await api('GET', `/api/topics/${t2.id}`, { as: gina })).body.tasks;
    expect(tasks.map((t: { title: string; blocked: boolean }) => [t.title, t.blocked])).toEqual([['x', false], ['y', true], ['z', true]]);
    expect((await api('PUT', `/api/topics/${t2.id}/reorder`, { as: gina, body: { taskIds: [z.id, x.id, y.id] } })).body).toEqual({ success: true });
    await api('POST', `/api/tasks/${z.id}/complete`, { as: gina });
    tasks = (await api('GET', `/api/topics/${t2.id}`, { as: gina })).body.tasks;
    expect(tasks.map((t: { title: string; blocked: boolean }) => [t.title, t.blocked])).toEqual([['z', false], ['x', false], ['y', true]]);
    await api('POST', `/api/tasks/${x.id}/snooze`, { as: gina, body: { snoozedUntil: '2099-01-01' } });
    expect((await api('GET', `/api/tasks/${y.id}`, { as: gina })).body.task.blocked).toBe(false); // a snoozed task does not block
    expect((await api('POST', '/api/topics/reorder', { as: gina, body: { topicIds: [t2.id, t1.id] } })).status).toBe(200);
    const listed = (await api('GET', '/api/topics', { as: gina })).body.topics;
    expect(listed.map((t: { title: string; taskCount: number; openTaskCount: number }) => [t.title, t.taskCount, t.openTaskCount])).toEqual([['Two', 3, 2], ['One', 0, 0]]);
    const upd = await api('PATCH', `/api/topics/${t1.id}`, { as: gina, body: { archived: true, title: 'Uno' } });
    expect(upd.body.topic).toMatchObject({ title: 'Uno', archived: true, color: '#ff8800', icon: 'star' });
    expect((await api('GET', '/api/topics?archived=false', { as: gina })).body.topics.map((t: { title: string }) => t.title)).toEqual(['Two']);
    expect((await api('DELETE', `/api/topics/${t2.id}`, { as: gina })).body).toEqual({ success: true });
    expect((await api('GET', `/api/tasks/${y.id}`, { as: gina })).body.task.topicId).toBeNull();
    expect((await eventFor('task.updated', y.id)).payload.task.topicId).toBeNull();
    expect((await api('GET', `/api/topics/${t2.id}`, { as: gina })).status).toBe(404);
  });

  it("the user's timezone decides what today is", async () => {
    const hank = randomUUID();
    expect((await api('GET', '/api/settings/timezone', { as: hank })).body).toEqual({ timezone: 'UTC' });
    const set = await api('PATCH', '/api/settings/timezone', { as: hank, body: { timezone: 'Pacific/Kiritimati' } });
    expect(set.body).toEqual({ success: true, timezone: 'Pacific/Kiritimati' });
    expect((await api('GET', '/api/settings/timezone', { as: hank })).body.timezone).toBe('Pacific/Kiritimati');
    // A new RECURRING task without a due date starts "today" in the user's zone (UTC+14).
    const r = await createTask(hank, { title: 'daily', type: 'RECURRING' });
    const kiritimatiToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Pacific/Kiritimati' }).format(new Date());
    expect(r.nextDueDate).toBe(kiritimatiToday);
    // A zone sent with the request (reference clients do) decides that request's today, without changing the profile.
    const pagoToday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Pacific/Pago_Pago' }).format(new Date());
    expect((await createTask(hank, { title: 'daily 2', type: 'RECURRING', timezone: 'Pacific/Pago_Pago' })).nextDueDate).toBe(pagoToday);
    expect((await api('GET', '/api/settings/timezone', { as: hank })).body.timezone).toBe('Pacific/Kiritimati');
    const bad = await api('POST', '/api/tasks', { as: hank, body: { title: 'x', timezone: 'Nowhere/Land' } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues[0].path).toBe('body.timezone');
  });

  it('calendar feed: secret URL from PUBLIC_APP_URL, iCal with every recurrence kind, rotation and revocation', async () => {
    const ivy = randomUUID();
    expect((await api('GET', '/api/settings/calendar-feed', { as: ivy })).body).toEqual({ active: false, createdAt: null });
    const kinds = [
      { title: 'interval', recurrenceType: 'INTERVAL', recurrenceInterval: 2, dueDate: '2030-01-31', rrule: { freq: 'DAILY', interval: 2 } },
      { title: 'weekday', recurrenceType: 'WEEKDAY', recurrenceWeekdays: [0, 2], recurrenceInterval: 2, dueDate: '2030-01-07', rrule: { freq: 'WEEKLY', interval: 2 } },
      { title: 'monthly', recurrenceType: 'MONTHLY', dueDate: '2030-01-31', rrule: { freq: 'MONTHLY' } },
      { title: 'yearly', recurrenceType: 'YEARLY', dueDate: '2032-02-29', rrule: { freq: 'YEARLY' } },
      { title: 'last friday', recurrenceType: 'NTH_WEEKDAY', recurrenceWeekdays: [4], recurrenceWeekOfMonth: -1, dueDate: '2030-01-01', rrule: { freq: 'MONTHLY' } },
    ];
    for (const k of kinds) await createTask(ivy, { title: k.title, type: 'RECURRING', recurrenceType: k.recurrenceType, recurrenceInterval: k.recurrenceInterval, recurrenceWeekdays: k.recurrenceWeekdays, recurrenceWeekOfMonth: k.recurrenceWeekOfMonth, recurrenceFixed: true, dueDate: k.dueDate });
    const open = await createTask(ivy, { title: 'one-off', dueDate: '2030-03-03' });
    const doneTask = await createTask(ivy, { title: 'done', dueDate: '2030-03-04' });
    await api('POST', `/api/tasks/${doneTask.id}/complete`, { as: ivy });
    await createTask(ivy, { title: 'undated' });

    const created = await api('POST', '/api/settings/calendar-feed', { as: ivy });
    expect(created.status).toBe(200);
    expect(created.body.url).toMatch(/^https:\/\/tasks\.example\.test\/api\/calendar\/ts_cal_[A-Za-z0-9_-]{43}\.ics$/);
    expect((await api('GET', '/api/settings/calendar-feed', { as: ivy })).body.active).toBe(true);
    const path = new URL(created.body.url).pathname;
    const feed = await api('GET', path);
    expect(feed.status).toBe(200);
    expect(feed.headers.get('content-type')).toMatch(/^text\/calendar/);
    const cal = new ICAL.Component(ICAL.parse(feed.text));
    const vevents = cal.getAllSubcomponents('vevent').map((v) => new ICAL.Event(v));
    expect(vevents.map((e) => e.summary).sort()).toEqual(['interval', 'last friday', 'monthly', 'one-off', 'weekday', 'yearly']);
    for (const k of kinds) {
      const ev = vevents.find((e) => e.summary === k.title)!;
      expect(ev.uid).toMatch(/^task-[0-9a-f-]{36}@task-service$/);
      expect(ev.startDate.isDate).toBe(true);
      const rrule = ev.component.getFirstPropertyValue('rrule') as unknown as { freq: string; interval: number };
      expect(rrule.freq, k.title).toBe(k.rrule.freq);
      if (k.rrule.interval) expect(rrule.interval).toBe(k.rrule.interval);
    }
    const next = (title: string, n: number) => {
      const it = vevents.find((e) => e.summary === title)!.iterator();
      return Array.from({ length: n }, () => it.next().toString());
    };
    expect(next('monthly', 3)).toEqual(['2030-01-31', '2030-02-28', '2030-03-31']);
    expect(next('yearly', 2)).toEqual(['2032-02-29', '2033-02-28']);
    expect(next('last friday', 2)).toEqual(['2030-01-25', '2030-02-22']);
    expect(next('weekday', 3)).toEqual(['2030-01-07', '2030-01-09', '2030-01-21']);
    expect(vevents.find((e) => e.summary === 'one-off')!.uid).toBe(`task-${open.id}@task-service`);

    const rotated = await api('POST', '/api/settings/calendar-feed', { as: ivy });
    expect(rotated.body.url).not.toBe(created.body.url);
    expect((await api('GET', path)).status).toBe(404);
    expect((await api('GET', new URL(rotated.body.url).pathname)).status).toBe(200);
    expect((await api('DELETE', '/api/settings/calendar-feed', { as: ivy })).body).toEqual({ success: true });
    expect((await api('GET', new URL(rotated.body.url).pathname)).status).toBe(404);
    expect((await api('GET', '/api/calendar/not-a-token.ics')).status).toBe(400);
    expect((await api('GET', '/api/settings/calendar-feed', { as: ivy })).body).toEqual({ active: false, createdAt: null });
  });
});
