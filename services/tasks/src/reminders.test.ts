import { randomUUID } from 'node:crypto';
import { TASK_EVENTS_FILTER, taskEvents, type TaskEventMessage } from '@tasksvc/proto';
import type { Subscription } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { quietLogger, testSystemConfig, until } from '../../../tools/testenv/index.ts';
import { apiClient, serveTestIdentities } from '../test/support.ts';
import { tasksService } from './service.ts';

/**
 * Time of day and reminders on a task (issue #57 part 3, the model): what create and update accept
 * and refuse, what the task JSON shows, and the schedule the task events carry for the scheduler.
 * In-process bus; identity from a TEST DOUBLE of auth.identity.resolve.
 */

let system: RunningSystem;
let identity: Subscription;
let api: ReturnType<typeof apiClient>;
const events: TaskEventMessage[] = [];
const user = randomUUID();

const future = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
const lastEvent = (name: string, id: string, after = 0) => until(() => events.slice(after).findLast((e) => e.payload.event === name && e.payload.task.id === id), `${name} of ${id}`);

async function create(body: Record<string, unknown>, as = user) {
  const res = await api('POST', '/api/tasks', { as, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task;
}

beforeAll(async () => {
  const config = await testSystemConfig({});
  system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
  identity = serveTestIdentities(system.bus);
  await system.bus.consume(taskEvents['task.created'], async (m) => void events.push(m), { durable: 'reminders-model-observer', filter: TASK_EVENTS_FILTER });
  api = apiClient(system.url);
  expect((await api('PUT', '/api/settings/timezone', { as: user, body: { timezone: 'Europe/Berlin' } })).status).toBe(200);
});

afterAll(async () => {
  await identity?.stop();
  await system?.stop();
});

describe('dueTime and reminders on a task', () => {
  it('a new task has no time and no reminders', async () => {
    const t = await create({ title: 'plain' });
    expect(t).toMatchObject({ dueTime: null, reminders: [] });
    // no schedule travels with an event of a task that has no reminders
    expect((await lastEvent('task.created', t.id)).reminders).toBeUndefined();
  });

  it('create with a time and reminders: stored, shown, and the event carries their instants in the user zone', async () => {
    const at = future(90);
    const t = await create({ title: 'dentist', dueDate: '2031-07-15', dueTime: '18:30', reminders: [{ beforeDueMinutes: 30 }, { at: at.replace('Z', '+00:00') }] });
    expect(t.dueTime).toBe('18:30');
    expect(t.reminders).toEqual([{ beforeDueMinutes: 30 }, { at }]);
    expect((await api('GET', `/api/tasks/${t.id}`, { as: user })).body.task).toMatchObject({ dueTime: '18:30', reminders: [{ beforeDueMinutes: 30 }, { at }] });
    const e = await lastEvent('task.created', t.id);
    // 18:30 CEST is 16:30Z; 30 minutes before is 16:00Z
    expect(e.reminders?.due).toEqual([
      { key: 'before:30', at: '2031-07-15T16:00:00.000Z' },
      { key: `at:${at}`, at },
    ]);
    // the webhook payload carries the time of day, not the reminders (their schedule travels beside it)
    expect(e.payload.task).toMatchObject({ dueDate: '2031-07-15', dueTime: '18:30' });
    expect(Object.keys(e.payload.task)).not.toContain('reminders');
  });

  it('the list shows the time of day', async () => {
    const t = await create({ title: 'listed', dueDate: '2031-01-02', dueTime: '07:05' });
    const list = await api('GET', '/api/tasks?limit=500', { as: user });
    expect(list.body.tasks.find((x: { id: string }) => x.id === t.id)).toMatchObject({ dueTime: '07:05', reminders: [] });
  });

  it('refuses bad input with a 400 naming the field, and writes nothing', async () => {
    const before = (await api('GET', '/api/tasks?limit=500', { as: user })).body.total;
    const cases: [Record<string, unknown>, string][] = [
      [{ title: 'x', dueTime: '09:00' }, 'body.dueTime'],
      [{ title: 'x', dueDate: '2031-01-01', dueTime: '24:00' }, 'body.dueTime'],
      [{ title: 'x', dueDate: '2031-01-01', dueTime: '9:00' }, 'body.dueTime'],
      [{ title: 'x', reminders: [{ beforeDueMinutes: 10 }] }, 'body.reminders'],
      [{ title: 'x', dueDate: '2031-01-01', reminders: [{ beforeDueMinutes: 40_321 }] }, 'body.reminders.0.beforeDueMinutes'],
      [{ title: 'x', dueDate: '2031-01-01', reminders: [{ beforeDueMinutes: -1 }] }, 'body.reminders.0.beforeDueMinutes'],
      [{ title: 'x', dueDate: '2031-01-01', reminders: [{ beforeDueMinutes: 1.5 }] }, 'body.reminders.0'],
      [{ title: 'x', reminders: [{ at: 'tomorrow' }] }, 'body.reminders.0.at'],
      [{ title: 'x', reminders: [{ at: future(5), beforeDueMinutes: 3 }] }, 'body.reminders.0'],
      [{ title: 'x', dueDate: '2031-01-01', reminders: [1, 2, 3, 4, 5, 6].map((m) => ({ beforeDueMinutes: m })) }, 'body.reminders'],
      [{ title: 'x', dueDate: '2031-01-01', reminders: [{ beforeDueMinutes: 5 }, { beforeDueMinutes: 5 }] }, 'body.reminders'],
    ];
    for (const [body, path] of cases) {
      const res = await api('POST', '/api/tasks', { as: user, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(
        res.body.issues.some((i: { path: string }) => i.path.startsWith(path)),
        `${JSON.stringify(body)}: ${JSON.stringify(res.body.issues)}`,
      ).toBe(true);
    }
    expect((await api('GET', '/api/tasks?limit=500', { as: user })).body.total).toBe(before);
  });

  it('update: set, change and clear; clearing the date clears the time, but not relative reminders', async () => {
    const t = await create({ title: 'later', dueDate: inDays(3) });
    const n = events.length;
    let res = await api('PATCH', `/api/tasks/${t.id}`, { as: user, body: { dueTime: '08:15', reminders: [{ beforeDueMinutes: 60 }] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.task).toMatchObject({ dueTime: '08:15', reminders: [{ beforeDueMinutes: 60 }] });
    expect((await lastEvent('task.updated', t.id, n)).reminders?.due).toHaveLength(1);

    res = await api('PATCH', `/api/tasks/${t.id}`, { as: user, body: { dueDate: null } });
    expect(res.status).toBe(400);
    expect(res.body.issues[0].path).toBe('body.dueDate');
    res = await api('PATCH', `/api/tasks/${t.id}`, { as: user, body: { dueDate: null, dueTime: '10:00' } });
    expect(res.body.issues[0].path).toBe('body.dueTime');

    const m = events.length;
    res = await api('PATCH', `/api/tasks/${t.id}`, { as: user, body: { dueDate: null, reminders: [] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.task).toMatchObject({ dueDate: null, dueTime: null, reminders: [] });
    // the reminders it lost travel as an empty schedule, so the scheduler drops them
    expect((await lastEvent('task.updated', t.id, m)).reminders?.due).toEqual([]);
  });

  it('completing and deleting empty the schedule; a RECURRING completion moves it to the next occurrence', async () => {
    const once = await create({ title: 'once', dueDate: inDays(2), reminders: [{ beforeDueMinutes: 0 }] });
    expect((await api('POST', `/api/tasks/${once.id}/complete`, { as: user, body: {} })).status).toBe(200);
    expect((await lastEvent('task.completed', once.id)).reminders?.due).toEqual([]);

    const gone = await create({ title: 'gone', dueDate: inDays(2), reminders: [{ beforeDueMinutes: 0 }] });
    expect((await api('DELETE', `/api/tasks/${gone.id}`, { as: user })).status).toBe(200);
    expect((await lastEvent('task.deleted', gone.id)).reminders?.due).toEqual([]);

    const daily = await create({ title: 'daily', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1, recurrenceFixed: true, dueDate: inDays(1), dueTime: '06:00', reminders: [{ beforeDueMinutes: 10 }] });
    const first = (await lastEvent('task.created', daily.id)).reminders!.due[0]!.at;
    expect((await api('POST', `/api/tasks/${daily.id}/complete`, { as: user, body: {} })).status).toBe(200);
    const next = (await lastEvent('task.completed', daily.id)).reminders!.due[0]!.at;
    expect(Date.parse(next)).toBeGreaterThan(Date.parse(first));
  });

  it("another user's task stays theirs", async () => {
    const t = await create({ title: 'mine', dueDate: inDays(1), dueTime: '09:00' });
    expect((await api('PATCH', `/api/tasks/${t.id}`, { as: randomUUID(), body: { dueTime: '10:00' } })).status).toBe(404);
  });
});
