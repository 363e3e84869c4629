import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TASK_EVENTS_FILTER, taskEvents, type TaskEventMessage } from '@tasksvc/proto';
import { createNatsBus, type Bus, type Subscription } from '@tasksvc/runtime';
import { zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../../tools/system.ts';
import { quietLogger, startNats, testSystemConfig, until, type LocalNats } from '../../../../tools/testenv/index.ts';
import { apiClient, serveTestIdentities } from '../../test/support.ts';
import { tasksService } from '../service.ts';

/**
 * The import end to end: the file as a raw HTTP body → gateway (in pieces over the bus) → tasks
 * service → preview → confirm → progress → result, against PostgreSQL, over NATS (the pieces must
 * fit its message limit) and over the in-process bus. Identity comes from a TEST DOUBLE of
 * auth.identity.resolve. Sample files: services/tasks/test/import-samples.
 */

const SAMPLES = new URL('../../test/import-samples/', import.meta.url);
const sample = (name: string) => readFileSync(new URL(encodeURIComponent(name), SAMPLES));

let nats: LocalNats;
let system: RunningSystem;
let identity: Subscription;
let observer: Bus;
const events: TaskEventMessage[] = [];
let api: ReturnType<typeof apiClient>;

/* eslint-disable @typescript-eslint/no-explicit-any */
async function upload(as: string, name: string, body: Uint8Array | string, contentType = 'application/octet-stream') {
  const res = await fetch(`${system.url}/api/user/import?filename=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { authorization: `Bearer test-${as}`, 'content-type': contentType },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}

async function confirmAndWait(as: string, id: string) {
  const res = await api('POST', `/api/user/import/${id}/confirm`, { as });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.import.status).toBe('running');
  return until(async () => {
    const r = await api('GET', `/api/user/import/${id}`, { as });
    return r.body.import.status === 'running' ? undefined : r.body.import;
  }, `import ${id} to finish`);
}

const count = (view: any, kind: string) => view.counts.find((c: any) => c.kind === kind);

async function rowsOf(user: string) {
  const tasks = (await system.pool.query('SELECT count(*)::int AS n FROM tasks.tasks WHERE user_id = $1', [user])).rows[0].n as number;
  const imports = (await system.pool.query('SELECT count(*)::int AS n FROM tasks.imports WHERE user_id = $1', [user])).rows[0].n as number;
  const chunks = (await system.pool.query('SELECT count(*)::int AS n FROM tasks.import_chunks WHERE user_id = $1', [user])).rows[0].n as number;
  return { tasks, imports, chunks };
}

describe.each([{ transport: 'NATS' }, { transport: 'in-process bus' }])('import over HTTP (gateway + $transport + Postgres; identity test double)', ({ transport }) => {
  const onNats = transport === 'NATS';
  beforeAll(async () => {
    events.length = 0;
    if (onNats) nats = await startNats();
    const config = await testSystemConfig({ NATS_URL: onNats ? nats.url : undefined, PUBLIC_APP_URL: 'https://tasks.example.test' });
    system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
    identity = serveTestIdentities(system.bus);
    observer = onNats ? await createNatsBus({ servers: nats.url, name: 'observer', log: quietLogger() }) : system.bus;
    await observer.consume(taskEvents['task.created'], async (m) => void events.push(m), { durable: 'import-test-observer', filter: TASK_EVENTS_FILTER });
    api = apiClient(system.url);
  });

  afterAll(async () => {
    await identity?.stop();
    if (onNats) await observer?.close();
    await system?.stop();
    if (onNats) await nats?.stop();
  });

  it('a Todoist CSV: preview first (nothing written), then confirm, progress and result; the same file again adds nothing', async () => {
    const ada = randomUUID();
    const up = await upload(ada, 'Home [2203306141].csv', sample('Home [2203306141].csv'), 'text/csv');
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const v = up.body.import;
    expect(v).toMatchObject({ status: 'previewed', format: 'todoist-csv', fileName: 'Home [2203306141].csv', files: ['Home [2203306141].csv'] });
    // 11 task rows, of which Milk and Oat milk are (sub)tasks; two identical "Learn the cello" rows stay two
    expect(count(v.preview, 'tasks').toImport).toBe(9);
    expect(count(v.preview, 'subtasks').toImport).toBe(2);
    expect(count(v.preview, 'topics').toImport).toBe(3);
    const problems = v.preview.problems.items as any[];
    expect(problems.find((p) => p.row === 2 && p.field === 'TYPE')).toMatchObject({ outcome: 'skipped', file: 'Home [2203306141].csv' });
    expect(problems.find((p) => p.title === 'Oat milk: which brand?' && p.field === 'INDENT')).toMatchObject({ row: 10, outcome: 'changed' });
    expect(problems.find((p) => p.title === 'Zahnarzt anrufen')).toMatchObject({ row: 14, field: 'DATE', outcome: 'changed' });
    const recurrences = v.preview.recurrences.items as any[];
    expect(recurrences.find((r) => r.title === 'Water the plants')).toMatchObject({ outcome: 'mapped', source: 'every monday', rule: { type: 'WEEKDAY', weekdays: [0], interval: 1, fixed: true } });
    expect(recurrences.find((r) => r.title.startsWith('Café crème'))).toMatchObject({ outcome: 'mapped', rule: { type: 'INTERVAL', interval: 3, fixed: false } });
    expect(recurrences.find((r) => r.title === 'Clean the gutters')).toMatchObject({ outcome: 'not-expressible', rule: null, row: 13, field: 'DATE' });
    expect((await rowsOf(ada)).tasks).toBe(0);

    const before = events.length;
    const done = await confirmAndWait(ada, v.id);
    expect(done.status, JSON.stringify(done)).toBe('done');
    expect(done.progress).toEqual({ done: done.progress.total, total: done.progress.total });
    expect(count(done.result, 'tasks').toImport + count(done.result, 'subtasks').toImport).toBe(11);
    const list = await api('GET', '/api/tasks?limit=50', { as: ada });
    expect(list.body.total).toBe(11);
    const byTitle = new Map<string, any>(list.body.tasks.map((t: any) => [t.title, t]));
    expect(byTitle.get('Pay rent')).toMatchObject({ priority: 'HIGH', type: 'RECURRING', recurrenceType: 'MONTHLY', notes: 'Transfer to the landlord, reference "flat 3"' });
    expect(byTitle.get('Water the plants')).toMatchObject({ recurrenceType: 'WEEKDAY', recurrenceWeekdays: [0], estimatedMinutes: 15, notes: '— Use the rain barrel first' });
    expect(byTitle.get('Renew passport')).toMatchObject({ dueDate: '2027-01-15', estimatedMinutes: 1440 });
    expect(byTitle.get('Clean the gutters')).toMatchObject({ type: 'ONE_TIME', dueDate: null });
    // INDENT 2 is a subtask; INDENT 3 hangs on its top-level task (one level here)
    const groceries = byTitle.get('Buy groceries');
    expect(byTitle.get('Milk')).toMatchObject({ parentId: groceries.id, topicId: groceries.topicId });
    expect(byTitle.get('Oat milk: which brand?')).toMatchObject({ parentId: groceries.id });
    const topics = await api('GET', '/api/topics', { as: ada });
    expect(topics.body.topics.map((t: any) => t.title).sort()).toEqual(['Home', 'Home / Errands', 'Home / Someday']);
    expect(byTitle.get('Buy groceries').topicId).toBe(topics.body.topics.find((t: any) => t.title === 'Home / Errands').id);
    // one task.created per imported task, committed together; no coins, nothing unlocked
    await until(() => (events.length - before >= 11 ? true : undefined), 'the import’s task.created events');
    expect(events.slice(before).filter((e) => e.userId === ada).map((e) => e.payload.event)).toEqual(Array(11).fill('task.created'));
    const profile = await api('GET', '/api/settings/profile', { as: ada });
    expect(profile.body.profile.coins).toBe(0);
    expect((await rowsOf(ada)).chunks).toBe(0);

    const again = await upload(ada, 'Home [2203306141].csv', sample('Home [2203306141].csv'), 'text/csv');
    const [t, sub] = [count(again.body.import.preview, 'tasks'), count(again.body.import.preview, 'subtasks')];
    expect([t.toImport + sub.toImport, t.alreadyImported + sub.alreadyImported]).toEqual([0, 11]);
    expect(count(again.body.import.preview, 'topics')).toMatchObject({ toImport: 0, alreadyImported: 3 });
    const second = await confirmAndWait(ada, again.body.import.id);
    expect(count(second.result, 'tasks').toImport).toBe(0);
    expect((await api('GET', '/api/tasks?limit=50', { as: ada })).body.total).toBe(11);
  });

  it('iCalendar VTODO files from Thunderbird, Nextcloud Tasks and tasks.org', async () => {
    const gus = randomUUID();
    const tb = await upload(gus, 'thunderbird.ics', sample('thunderbird.ics'), 'text/calendar');
    expect(tb.status, JSON.stringify(tb.body)).toBe(201);
    const p = tb.body.import.preview;
    expect(tb.body.import.format).toBe('icalendar');
    expect(count(p, 'tasks').toImport).toBe(5);
    const rec = new Map<string, any>(p.recurrences.items.map((r: any) => [r.title, r]));
    expect(rec.get('Team sync notes – prepare the agenda')).toMatchObject({ outcome: 'mapped', field: 'RRULE', rule: { type: 'WEEKDAY', weekdays: [0, 2] } });
    expect(rec.get('Pay the electricity bill')).toMatchObject({ outcome: 'mapped', rule: { type: 'MONTHLY' } });
    expect(rec.get('Physiotherapy exercises (ten sessions)')).toMatchObject({ outcome: 'not-expressible', rule: null, source: 'RRULE:FREQ=DAILY;COUNT=10' });
    expect(rec.get("Water the neighbour's cat while they are away")).toMatchObject({ outcome: 'not-expressible' });
    const problems = p.problems.items as any[];
    expect(problems.find((x) => x.title === 'Renew the gym membership')).toMatchObject({ outcome: 'skipped', field: 'STATUS', row: 75 });
    expect(problems.find((x) => x.field === 'VEVENT')).toMatchObject({ outcome: 'skipped', title: 'Dentist' });
    expect((await confirmAndWait(gus, tb.body.import.id)).status).toBe('done');
    const tasks = new Map<string, any>((await api('GET', '/api/tasks?limit=50', { as: gus })).body.tasks.map((t: any) => [t.title, t]));
    // 09:30 in Berlin is 08:30 in the user's zone (UTC); its alarm 15 minutes before the 09:00 start is a reminder 45 minutes before due
    expect(tasks.get('Team sync notes – prepare the agenda')).toMatchObject({ type: 'RECURRING', recurrenceType: 'WEEKDAY', recurrenceWeekdays: [0, 2], dueTime: '08:30', priority: 'HIGH', reminders: [{ beforeDueMinutes: 45 }] });
    expect(tasks.get('Book the train to Zürich')).toMatchObject({ completedAt: '2026-11-20T17:30:00.000Z' });
    expect(tasks.get('Physiotherapy exercises (ten sessions)')).toMatchObject({ type: 'ONE_TIME', dueDate: '2026-12-08' });

    const nc = await upload(gus, 'nextcloud.ics', sample('nextcloud-tasks.ics'), 'text/calendar');
    expect(count(nc.body.import.preview, 'subtasks').toImport).toBe(2);
    expect((await confirmAndWait(gus, nc.body.import.id)).status).toBe('done');
    const all = (await api('GET', '/api/tasks?limit=100', { as: gus })).body.tasks as any[];
    const move = all.find((t) => t.title === 'Umzug nach Köln vorbereiten 📦');
    expect(move.notes).toContain('Nachsendeauftrag stellen – die Post braucht zwei Wochen Vorlauf');
    expect(all.filter((t) => t.parentId === move.id).map((t) => t.title).sort()).toEqual(['Bei der Drogerie nach Bananenkisten fragen', 'Kartons besorgen']);
    expect(all.find((t) => t.title === 'Floating reminder: call Mum at six')).toMatchObject({ dueDate: '2026-12-12', dueTime: '18:00' });

    const org = await upload(gus, 'tasks-org.ics', sample('tasks-org.ics'), 'text/calendar');
    const orgRec = new Map<string, any>(org.body.import.preview.recurrences.items.map((r: any) => [r.title, r]));
    expect(orgRec.get('Last Friday of the month: review the budget')).toMatchObject({ outcome: 'mapped', rule: { type: 'NTH_WEEKDAY', weekOfMonth: -1, weekdays: [4] } });
    expect(orgRec.get('First and third Monday (cannot be held)')).toMatchObject({ outcome: 'not-expressible' });
  });

  it('a Todoist backup ZIP of project CSVs', async () => {
    const bob = randomUUID();
    const zip = zipSync({ 'Home [2203306141].csv': sample('Home [2203306141].csv'), 'Inbox.csv': sample('Inbox.csv'), 'readme.txt': new TextEncoder().encode('not a project') });
    const up = await upload(bob, 'todoist-backup.zip', zip, 'application/zip');
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    expect(up.body.import).toMatchObject({ format: 'todoist-zip', files: ['todoist-backup.zip/Home [2203306141].csv', 'todoist-backup.zip/Inbox.csv'] });
    expect(up.body.import.preview.problems.items.find((p: any) => p.file === 'todoist-backup.zip/readme.txt')).toMatchObject({ outcome: 'skipped' });
    const done = await confirmAndWait(bob, up.body.import.id);
    expect(done.status).toBe('done');
    const inbox = (await api('GET', '/api/tasks?topicId=none', { as: bob })).body.tasks.map((t: any) => t.title).sort();
    expect(inbox).toEqual(['Call the bank', 'Read “Der Zauberberg”', 'Take out the bins']);
  });

  it('bad files answer 400 naming file, row and field, and keep nothing', async () => {
    const cy = randomUUID();
    const cases: [string, string | Uint8Array, { file: string; row?: number; field?: string }][] = [
      ['latin1.csv', sample('latin1.csv'), { file: 'latin1.csv', row: 2 }],
      ['truncated.csv', sample('truncated.csv'), { file: 'truncated.csv' }],
      ['bad-priority.csv', sample('bad-priority.csv'), { file: 'bad-priority.csv', row: 3, field: 'PRIORITY' }],
      ['notes.txt', 'just some words\n', { file: 'notes.txt' }],
      ['cut.json', sample('momo-export.json').subarray(0, 900), { file: 'cut.json' }],
      ['broken.zip', zipSync({ 'a.csv': sample('Inbox.csv') }).subarray(0, 60), { file: 'broken.zip' }],
      ['bad-date.ics', sample('bad-date.ics'), { file: 'bad-date.ics', row: 14, field: 'DUE' }],
      ['truncated.ics', sample('truncated.ics'), { file: 'truncated.ics' }],
    ];
    for (const [name, body, where] of cases) {
      const res = await upload(cy, name, body);
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.code).toBe('IMPORT_FILE_INVALID');
      expect(res.body.issues[0], name).toMatchObject(where);
      expect(res.body.message).toContain(name);
    }
    expect(await rowsOf(cy)).toEqual({ tasks: 0, imports: 0, chunks: 0 });
  });

  it('a file over the size limit is 413; an empty body 400', async () => {
    const dee = randomUUID();
    const big = await upload(dee, 'huge.csv', new Uint8Array(16 * 1024 * 1024 + 1));
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('PAYLOAD_TOO_LARGE');
    const empty = await upload(dee, 'empty.csv', '');
    expect(empty.status).toBe(400);
    expect(await rowsOf(dee)).toEqual({ tasks: 0, imports: 0, chunks: 0 });
  });

  it('a Momo export with every kind: mapped recurrences, history without coins or achievements, everything left out reported', async () => {
    const eve = randomUUID();
    const up = await upload(eve, 'momo-export-2026-11-30.json', sample('momo-export.json'), 'application/json');
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    const p = up.body.import.preview;
    expect(up.body.import.format).toBe('reference');
    expect(count(p, 'topics').toImport).toBe(2);
    expect(count(p, 'tasks').toImport).toBe(5);
    expect(count(p, 'completions').toImport).toBe(3);
    expect(count(p, 'wishlistItems').toImport).toBe(3);
    const fields = p.problems.items.map((x: any) => `${x.field}:${x.outcome}`);
    expect(fields).toEqual(
      expect.arrayContaining(['topics.color:changed', 'tasks.topicId:changed', 'tasks.coinValue:changed', 'taskCompletions.taskId:skipped', 'wishlistItems.url:changed', 'profile.coins:skipped', 'achievements:skipped', 'notificationLog:skipped']),
    );
    expect(p.recurrences.items[0]).toMatchObject({ title: 'Mow the lawn', outcome: 'mapped', rule: { type: 'INTERVAL', interval: 7 } });
    const done = await confirmAndWait(eve, up.body.import.id);
    expect(done.status, JSON.stringify(done)).toBe('done');
    const tasks = (await api('GET', '/api/tasks?limit=50', { as: eve })).body.tasks as any[];
    expect(tasks.find((t) => t.title === 'Mow the lawn')).toMatchObject({ type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 7, nextDueDate: '2026-12-05', coinValue: 2 });
    expect(tasks.find((t) => t.title === 'Collect the receipts')).toMatchObject({ completedAt: '2026-03-28T19:45:00.000Z', priority: 'HIGH' });
    expect(tasks.find((t) => t.title === 'Write to Grandmère ✉️')).toMatchObject({ pausedUntil: '2027-01-10' });
    const profile = (await api('GET', '/api/settings/profile', { as: eve })).body.profile;
    expect(profile).toMatchObject({ coins: 0, notificationEnabled: true, streakReminderEnabled: true, weeklyReviewEnabled: true, notificationTime: '08:30', morningBriefingTime: '07:15' });
    expect((await api('GET', '/api/achievements', { as: eve })).body.achievements.filter((a: any) => a.unlocked)).toEqual([]);
    const history = await system.pool.query('SELECT coins_awarded, imported FROM tasks.task_completions WHERE user_id = $1', [eve]);
    expect(history.rows).toHaveLength(3);
    expect(history.rows.every((r) => r.coins_awarded === 0 && r.imported)).toBe(true);
  });

  it('a preview can be cancelled (and then not confirmed); another user sees no import of someone else', async () => {
    const fay = randomUUID();
    const up = await upload(fay, 'Inbox.csv', sample('Inbox.csv'));
    const id = up.body.import.id;
    expect((await api('GET', `/api/user/import/${id}`, { as: randomUUID() })).status).toBe(404);
    expect((await api('POST', `/api/user/import/${id}/confirm`, { as: randomUUID() })).status).toBe(404);
    const cancelled = await api('DELETE', `/api/user/import/${id}`, { as: fay });
    expect(cancelled.body.import.status).toBe('cancelled');
    const late = await api('POST', `/api/user/import/${id}/confirm`, { as: fay });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('IMPORT_STATE');
    expect(await rowsOf(fay)).toMatchObject({ tasks: 0, chunks: 0 });
  });
});
