import { randomBytes } from 'node:crypto';
import { purposeKey } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signLink } from '../../tasks/src/domain/action-links.ts';
import { startSystem, type RunningSystem } from '../../../tools/system.ts';
import { quietLogger, testSystemConfig, until } from '../../../tools/testenv/index.ts';
import { createUserWithApiKey } from '../../../tools/testenv/users.ts';
import { startReminderPeers, type NtfyMessage, type ReminderPeers } from './reminder-peers.ts';

/**
 * Reminders at a time, rule by rule, on the whole system in one process (the embedded mode: the
 * in-process bus, the scheduler's own timer), delivering to a real ntfy-compatible receiver; the
 * action buttons are tapped as the ntfy app does (the action's HTTP request). Users and API keys
 * are real (the auth service's storage).
 */

let peers: ReminderPeers;
let system: RunningSystem;
let config: RunningSystem['config'];
/** user id → Authorization header */
const keys = new Map<string, string>();
let user = '';

/** A JSON call to the gateway as a user (their API key). */
async function api(method: string, path: string, opts: { as: string; body?: unknown }) {
  const headers: Record<string, string> = { authorization: keys.get(opts.as)! };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${system.url}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) };  
}
async function newUser(): Promise<string> {
  const u = await createUserWithApiKey(system.pool);
  keys.set(u.userId, u.authorization);
  return u.userId;
}
const soon = (ms: number) => new Date(Date.now() + ms).toISOString();

async function boot() {
  system = await startSystem(config, { log: quietLogger() });
}
async function shutdown() {
  await system?.stop();
}

async function task(body: Record<string, unknown>, as = user) {
  const res = await api('POST', '/api/tasks', { as, body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.task as { id: string; title: string };
}
const received = (title: string) => until(() => peers.ntfy.find((m) => m.title === title), `ntfy message "${title}"`);
/** Tap a button as the ntfy app does: the action's own request. */
const tap = async (m: NtfyMessage, label: string) => {
  const a = m.actions!.find((x) => x.label === label)!;
  const res = await fetch(a.url, { method: a.method ?? 'POST' });
  return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
};
const queueRows = async (taskId: string) =>
  (await system.pool.query<{ reminder_key: string; fire_at: Date; handled_at: Date | null; outcome: string | null }>('SELECT reminder_key, fire_at, handled_at, outcome FROM scheduler.reminder_queue WHERE task_id = $1 ORDER BY fire_at', [taskId])).rows;

beforeAll(async () => {
  peers = await startReminderPeers();
  const base = await testSystemConfig({ OUTBOUND_ALLOW_LIST: '127.0.0.1', TOTP_ENCRYPTION_KEY: randomBytes(32).toString('hex') });
  config = { ...base, PUBLIC_APP_URL: `http://127.0.0.1:${base.PORT}` };
  await boot();
  user = await newUser();
  for (const u of [user]) {
    expect((await api('PUT', '/api/settings/timezone', { as: u, body: { timezone: 'Europe/Berlin' } })).status).toBe(200);
    const ch = await api('PUT', '/api/settings/notification-channels/ntfy', { as: u, body: { config: { server: peers.url, topic: `t-${u.slice(0, 8)}` } } });
    expect(ch.status, JSON.stringify(ch.body)).toBe(200);
  }
}, 120_000);

afterAll(async () => {
  await shutdown();
  await peers?.stop();
});

describe('reminders at a time', () => {
  it('fires at its time over the user channel, with Done and Snooze 1 h buttons; Done completes through the app path, once', async () => {
    const at = soon(1500);
    const t = await task({ title: 'call mum', dueDate: '2031-07-15', dueTime: '18:30', reminders: [{ at }] });
    const m = await received('call mum');
    // within the bound of its time (here: as soon as the timer wakes)
    expect(m.receivedAt - Date.parse(at)).toBeGreaterThanOrEqual(0);
    expect(m.receivedAt - Date.parse(at)).toBeLessThan(60_000);
    expect(m).toMatchObject({ tags: ['reminder'], message: 'Due 2031-07-15 at 18:30' });
    expect(m.actions?.map((a) => [a.action, a.label, a.method])).toEqual([
      ['http', 'Done', 'POST'],
      ['http', 'Snooze 1 h', 'POST'],
    ]);
    expect(m.actions![0]!.url.startsWith(`${config.PUBLIC_APP_URL}/api/reminder-actions/`)).toBe(true);

    const coins = async () => (await api('GET', '/api/settings/profile', { as: user })).body.profile.coins as number;
    const before = await coins();
    const done = await tap(m, 'Done');
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ action: 'done', coinsEarned: 1 });
    expect(done.body.task.completedAt).not.toBeNull();
    expect((await api('GET', `/api/tasks/${t.id}`, { as: user })).body.task.completedAt).not.toBeNull();
    expect(await coins()).toBeGreaterThanOrEqual(before + 1);
    // a second tap, or the other button of the same notification: refused, nothing completed twice
    const again = await tap(m, 'Done');
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/already answered/);
    expect((await tap(m, 'Snooze 1 h')).status).toBe(409);
    const { rows } = await system.pool.query('SELECT count(*)::int AS n FROM tasks.task_completions WHERE task_id = $1', [t.id]);
    expect(rows[0].n).toBe(1);
  });

  it('Snooze 1 h queues the reminder again an hour later (a task.updated like an edit in the app)', async () => {
    const t = await task({ title: 'stretch', reminders: [{ at: soon(1000) }] });
    const m = await received('stretch');
    const tappedAt = Date.now();
    const snoozed = await tap(m, 'Snooze 1 h');
    expect(snoozed.status, JSON.stringify(snoozed.body)).toBe(200);
    const remindAt = Date.parse(snoozed.body.remindAt);
    expect(remindAt - tappedAt).toBeGreaterThan(59 * 60_000);
    expect(remindAt - tappedAt).toBeLessThan(61 * 60_000);
    // the fired reminder is gone from the task, the new one is there and queued
    expect(snoozed.body.task.reminders).toEqual([{ at: new Date(remindAt).toISOString() }]);
    await until(async () => (await queueRows(t.id)).find((r) => r.fire_at.getTime() === remindAt && r.handled_at === null), 'the snoozed reminder queued');
    expect((await tap(m, 'Snooze 1 h')).status).toBe(409);
  });

  it('a link that is not ours is 403, an expired one 410 (and neither changes anything)', async () => {
    const t = await task({ title: 'links' });
    const key = purposeKey(config.AUTH_SECRET, 'reminder-action-links/v1');
    const expired = signLink(key, { action: 'done', taskId: t.id, userId: user, nonce: randomBytes(12).toString('hex'), expires: Date.now() - 1000 });
    const forged = signLink(randomBytes(32), { action: 'done', taskId: t.id, userId: user, nonce: randomBytes(12).toString('hex'), expires: Date.now() + 60_000 });
    const post = (token: string) => fetch(`${system.url}/api/reminder-actions/${token}`, { method: 'POST' });
    expect((await post(expired)).status).toBe(410);
    expect((await post(forged)).status).toBe(403);
    expect((await post('not-a-token')).status).toBe(400);
    expect((await api('GET', `/api/tasks/${t.id}`, { as: user })).body.task.completedAt).toBeNull();
  });

  it('completed and deleted tasks cancel their reminders; paused tasks and vacation suppress them', async () => {
    const at = soon(2500);
    const done = await task({ title: 'gets done', reminders: [{ at }] });
    const gone = await task({ title: 'gets deleted', reminders: [{ at }] });
    const paused = await task({ title: 'gets paused', reminders: [{ at }] });
    const control = await task({ title: 'fires', reminders: [{ at }] });
    const away = await newUser();
    expect((await api('PUT', '/api/settings/notification-channels/ntfy', { as: away, body: { config: { server: peers.url, topic: 'away' } } })).status).toBe(200);
    const onVacation = await task({ title: 'on vacation', reminders: [{ at }] }, away);
    expect((await api('POST', `/api/tasks/${done.id}/complete`, { as: user, body: {} })).status).toBe(200);
    expect((await api('DELETE', `/api/tasks/${gone.id}`, { as: user })).status).toBe(200);
    expect((await api('POST', `/api/tasks/${paused.id}/pause`, { as: user, body: {} })).status).toBe(200);
    expect((await api('PUT', '/api/settings/vacation-mode', { as: away, body: { active: true } })).status).toBe(200);

    await received('fires');
    const outcome = async (id: string) => (await queueRows(id))[0]?.outcome ?? 'no row';
    await until(async () => (await outcome(paused.id)) === 'paused' && (await outcome(onVacation.id)) === 'vacation', 'paused and vacation reminders handled');
    // completing and deleting took their rows off the queue before their time
    expect(await queueRows(done.id)).toEqual([]);
    expect(await queueRows(gone.id)).toEqual([]);
    expect(await outcome(control.id)).toBe('sent');
    expect(peers.ntfy.map((m) => m.title)).not.toContain('gets done');
    expect(peers.ntfy.map((m) => m.title)).not.toContain('gets deleted');
    expect(peers.ntfy.map((m) => m.title)).not.toContain('gets paused');
    expect(peers.ntfy.map((m) => m.title)).not.toContain('on vacation');
  });

  it("relative reminders are queued at the due time in the user's zone (18:30 Berlin summer time, 30 and 0 minutes before)", async () => {
    const t = await task({ title: 'relative', dueDate: '2031-07-15', dueTime: '18:30', reminders: [{ beforeDueMinutes: 30 }, { beforeDueMinutes: 0 }] });
    await until(async () => (await queueRows(t.id)).length === 2, 'two queue rows');
    expect((await queueRows(t.id)).map((r) => [r.reminder_key, r.fire_at.toISOString()])).toEqual([
      ['before:30', '2031-07-15T16:00:00.000Z'],
      ['before:0', '2031-07-15T16:30:00.000Z'],
    ]);
    // a new due time moves them (the old rows go, the new ones come)
    expect((await api('PATCH', `/api/tasks/${t.id}`, { as: user, body: { dueTime: '08:00' } })).status).toBe(200);
    await until(async () => (await queueRows(t.id)).map((r) => r.fire_at.toISOString()).join() === '2031-07-15T05:30:00.000Z,2031-07-15T06:00:00.000Z', 'rows moved');
  });

  it("a new timezone moves the queued reminders to the due time in that zone (a reminder at an instant stays)", async () => {
    const traveller = await newUser();
    expect((await api('PUT', '/api/settings/timezone', { as: traveller, body: { timezone: 'Europe/Berlin' } })).status).toBe(200);
    const at = '2031-07-01T07:00:00.000Z';
    const t = await task({ title: 'travel', dueDate: '2031-07-15', dueTime: '18:30', reminders: [{ beforeDueMinutes: 30 }, { at }] }, traveller);
    const queued = async () => (await queueRows(t.id)).map((r) => r.fire_at.toISOString()).join();
    await until(async () => (await queued()) === `${at},2031-07-15T16:00:00.000Z`, 'queued at 18:00 Berlin time');
    expect((await api('PUT', '/api/settings/timezone', { as: traveller, body: { timezone: 'America/New_York' } })).status).toBe(200);
    // 18:00 in New York (UTC-4 in July)
    await until(async () => (await queued()) === `${at},2031-07-15T22:00:00.000Z`, 'moved to 18:00 New York time');
  });

  it('a reminder whose time passed while the system was down is sent when it is back, late and saying so', async () => {
    const t = await task({ title: 'missed', reminders: [{ at: soon(3_600_000) }] });
    await until(async () => (await queueRows(t.id)).length === 1, 'queued');
    await shutdown();
    // the system is down over the reminder's time: five minutes ago (the row and the task agree on it)
    const missed = new Date(Date.now() - 5 * 60_000);
    missed.setUTCSeconds(0, 0);
    const pool = (await import('@tasksvc/runtime')).createPool(config.DATABASE_URL, quietLogger());
    await pool.query('UPDATE tasks.tasks SET reminders = $2::jsonb WHERE id = $1', [t.id, JSON.stringify([{ at: missed.toISOString() }])]);
    await pool.query("UPDATE scheduler.reminder_queue SET fire_at = $2, reminder_key = 'at:' || $3 WHERE task_id = $1", [t.id, missed, missed.toISOString()]);
    await pool.end();
    await boot();
    const m = await received('missed');
    expect(m.message).toMatch(/^Sent late: this reminder was due at \d\d:\d\d on \d{4}-\d\d-\d\d, when the service was not running\.$/);
    const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(missed);
    expect(m.message).toContain(`due at ${local}`);
    expect((await queueRows(t.id))[0]?.outcome).toBe('sent');
  });
});
