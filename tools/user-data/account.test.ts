import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { EXPORTS_PER_HOUR, type UserExport } from '@tasksvc/proto';
import type { Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem } from '../system.ts';
import { fileNats, testSystemConfig, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { EXPORT_COVERAGE } from './coverage.ts';
import { createSession, seedUserEverywhere, startFailingReceiver, type SeededUser } from './seed.ts';
import { allUserTables, userRowCounts } from './tables.ts';
import { exportValidator } from './validator.ts';

/**
 * The user's data going out and going away, on the whole system (all six services, real PostgreSQL),
 * once over the in-process bus (`npm start`) and once over NATS with JetStream (the distributed
 * transport): a user with rows in every table that holds a user's id (the list derived from the
 * drizzle schemas) is exported — checked by ajv against the published JSON Schema, and the .ics by
 * Debian's python3-icalendar — and deleted, after which no row in any schema mentions them.
 */

const nats = fileNats();
const PYTHON = '/usr/bin/python3';

/** Every row of every table in the services' schemas (outboxes included) whose text mentions `needle`, by table. */
async function rowsMentioning(pool: Pool, needle: string): Promise<Record<string, number>> {
  const { rows: tables } = await pool.query<{ s: string; t: string }>(
    `SELECT table_schema AS s, table_name AS t FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema', 'public')`,
  );
  const out: Record<string, number> = {};
  for (const { s, t } of tables) {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${s}"."${t}" x WHERE x::text LIKE '%' || $1 || '%'`, [needle]);
    if (rows[0]!.n > 0) out[`${s}.${t}`] = rows[0]!.n;
  }
  return out;
}

describe.each([{ transport: 'in-process bus' }, { transport: 'NATS' }])('your data, over the $transport', ({ transport }) => {
  let sys: RunningSystem;
  let receiver: Awaited<ReturnType<typeof startFailingReceiver>>;
  let alice: SeededUser;
  let bob: SeededUser;
  const authSecret = `export-test-${randomBytes(16).toString('hex')}`;

  const get = (path: string, headers: Record<string, string>) => fetch(`${sys.url}${path}`, { headers });

  beforeAll(async () => {
    receiver = await startFailingReceiver();
    const config = await testSystemConfig(
      { OUTBOUND_ALLOW_LIST: '127.0.0.1', TOTP_ENCRYPTION_KEY: randomBytes(32).toString('hex'), RATE_LIMIT_WRITES: 'true', AUTH_SECRET: authSecret, },
      { natsUrl: transport === 'NATS' ? nats.url() : undefined },
    );
    sys = await startSystem(config);
    alice = await seedUserEverywhere({ url: sys.url, pool: sys.pool, authSecret }, receiver.url);
    bob = await seedUserEverywhere({ url: sys.url, pool: sys.pool, authSecret }, receiver.url);
  }, 180_000);

  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  it('GET /api/user/export: a document valid against docs/user-export.schema.json, covering every user table (or naming why not), without secrets or another user', async () => {
    const res = await get('/api/user/export', { authorization: alice.authorization });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="task-service-export-\d{4}-\d{2}-\d{2}\.json"$/);
    expect(res.headers.get('x-export-tasks')).toBe(String(alice.taskIds.length));
    const text = await res.text();
    const doc = JSON.parse(text) as UserExport;
    const validate = exportValidator();
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    expect(doc).toMatchObject({ format: 'task-service-export', version: 1, account: { id: alice.userId, email: alice.email }, settings: { timezone: 'Europe/Berlin' } });
    expect(doc.tasks.map((t) => t.id).sort()).toEqual([...alice.taskIds].sort());
    const recurring = doc.tasks.find((t) => t.type === 'RECURRING')!;
    expect(recurring).toMatchObject({ recurrenceType: 'WEEKDAY', recurrenceWeekdays: [0, 3], recurrenceFixed: true, notes: 'Both balconies — ümlauts too' });
    expect(recurring.recurrenceAnchor).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(doc.completions.filter((c) => c.taskId === recurring.id)).toHaveLength(1);
    expect(doc.game.level).toBeGreaterThanOrEqual(1);
    expect(doc.notifications.channels[0]).toMatchObject({ type: 'http-alert', secretsSet: ['secret'] });
    expect(doc.webhooks[0]).toMatchObject({ hasSecret: true });
    expect(doc.account.security).toMatchObject({ totpEnabled: true, backupCodesRemaining: 3 });

    // every table with a user column is exported (as many entries as the user has rows) or excluded with a reason
    const counts = await userRowCounts(sys.pool, alice.userId);
    const tables = allUserTables().map((t) => `${t.schema}.${t.table}`);
    expect(tables.filter((t) => !EXPORT_COVERAGE[t]), 'user tables in neither the export nor the exclusions of tools/user-data/coverage.ts').toEqual([]);
    for (const t of tables) {
      const c = EXPORT_COVERAGE[t]!;
      if ('entries' in c) expect(c.entries(doc), `${t} → ${c.exported}`).toBe(counts[t]);
    }
    // every exclusion is named in the docs
    const moving = readFileSync(new URL('../../docs/moving.md', import.meta.url), 'utf8');
    for (const [t, c] of Object.entries(EXPORT_COVERAGE)) if ('excluded' in c) expect(moving, `docs/moving.md names the exclusion of ${t}`).toContain(`\`${t}\``);

    for (const secret of ['alert-signing-secret', 'webhook-signing-secret', alice.authorization.slice('Bearer '.length), alice.cookie.split('=')[1]!, 'iv:tag:ciphertext', bob.email, bob.userId]) {
      expect(text.includes(secret), `the export holds ${secret.slice(0, 12)}…`).toBe(false);
    }
  });

  it('GET /api/user/export.ics: every task as a VTODO that python3-icalendar reads', async () => {
    const res = await get('/api/user/export.ics', { authorization: alice.authorization });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/calendar/);
    expect(res.headers.get('content-disposition')).toMatch(/filename="task-service-export-\d{4}-\d{2}-\d{2}\.ics"/);
    const ics = await res.text();
    const script = `
import sys, json, icalendar
cal = icalendar.Calendar.from_ical(sys.stdin.read())
todos = [c for c in cal.walk('VTODO')]
print(json.dumps({
  'zones': [str(z['TZID']) for z in cal.walk('VTIMEZONE')],
  'todos': [{'summary': str(t['SUMMARY']), 'status': str(t.get('STATUS')), 'priority': int(t['PRIORITY']), 'rrule': t['RRULE'].to_ical().decode() if 'RRULE' in t else None,
             'categories': [str(c) for c in t['CATEGORIES'].cats] if 'CATEGORIES' in t else [], 'due': t['DUE'].to_ical().decode() if 'DUE' in t else None,
             'tzid': t['DUE'].params.get('TZID') if 'DUE' in t else None, 'uid': str(t['UID']), 'related': str(t['RELATED-TO']) if 'RELATED-TO' in t else None} for t in todos]}))
`;
    type Todo = { summary: string; status: string; priority: number; rrule: string | null; categories: string[]; due: string | null; tzid: string | null; uid: string; related: string | null };
    const read = JSON.parse(execFileSync(PYTHON, ['-c', script], { input: ics, encoding: 'utf8' })) as { zones: string[]; todos: Todo[] };
    expect(read.todos).toHaveLength(alice.taskIds.length);
    expect(read.zones).toContain('Europe/Berlin');
    const plants = read.todos.find((t) => t.summary === 'Water the plants')!;
    expect(plants.rrule).toMatch(/FREQ=WEEKLY/);
    expect(plants.rrule).toMatch(/BYDAY=MO,TH/);
    expect(plants.categories).toEqual(['Home']);
    const taxes = read.todos.find((t) => t.summary === 'File taxes')!;
    expect(taxes).toMatchObject({ status: 'COMPLETED', priority: 1, due: '20260531' });
    // a task a CalDAV client wrote keeps the client's UID
    expect(read.todos.find((t) => t.summary === 'Someday: learn the cello')).toMatchObject({ priority: 9, status: 'NEEDS-ACTION', uid: `client-uid-${alice.userId}` });
    expect(ics).toMatch(/^X-CLIENT-FLAG(;VALUE=TEXT)?:kept\r$/m);
    // a subtask names its parent, and its time of day is in the user's zone
    const trip = read.todos.find((t) => t.summary === 'Plan the trip')!;
    expect(read.todos.find((t) => t.summary === 'Book the train')).toMatchObject({ related: trip.uid, due: '20270401T183000', tzid: 'Europe/Berlin' });
  });

  it(`allows ${EXPORTS_PER_HOUR} exports per hour per user (JSON and .ics together), then 429 with Retry-After`, async () => {
    const u = await createUserWithApiKey(sys.pool);
    const h = { authorization: u.authorization };
    for (let i = 0; i < EXPORTS_PER_HOUR; i++) expect((await get(i % 2 ? '/api/user/export.ics' : '/api/user/export', h)).status).toBe(200);
    const over = await get('/api/user/export', h);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await over.json()) as { code: string }).code).toBe('RATE_LIMITED');
    expect((await get('/api/user/export', {})).status).toBe(401);
  });

  it('DELETE /api/user: refused to API keys and to a session older than 10 minutes; then every row of the user goes, in every schema, and nobody else\'s', async () => {
    const del = (headers: Record<string, string>) => fetch(`${sys.url}/api/user`, { method: 'DELETE', headers });
    const byKey = await del({ authorization: alice.authorization });
    expect(byKey.status).toBe(403);
    expect(((await byKey.json()) as { code: string }).code).toBe('FORBIDDEN');
    const stale = await del({ cookie: await createSession(sys.pool, authSecret, alice.userId, { ageMinutes: 30 }) });
    expect(stale.status).toBe(403);
    expect(((await stale.json()) as { code: string }).code).toBe('RECENT_AUTH_REQUIRED');
    expect(Object.values(await userRowCounts(sys.pool, alice.userId)).every((n) => n > 0)).toBe(true);
    const bobBefore = await userRowCounts(sys.pool, bob.userId);

    const done = await del({ cookie: alice.cookie });
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({ success: true });
    // signed out at once: the session and the API key no longer resolve
    expect((await fetch(`${sys.url}/api/auth/me`, { headers: { cookie: alice.cookie } })).status).toBe(401);
    expect((await get('/api/tasks', { authorization: alice.authorization })).status).toBe(401);

    // each service's consumer deletes its rows; then no row of any table in any schema (outboxes too) mentions the user
    await until(async () => Object.values(await userRowCounts(sys.pool, alice.userId)).every((n) => n === 0), "every service's consumer to delete the user's rows", 30_000);
    const left = await until(async () => {
      const m = await rowsMentioning(sys.pool, alice.userId);
      return Object.keys(m).length === 0 ? m : null;
    }, 'no row mentioning the user', 30_000).catch(async () => rowsMentioning(sys.pool, alice.userId));
    expect(left).toEqual({});
    expect(await rowsMentioning(sys.pool, alice.email)).toEqual({});
    // the other user keeps everything (their webhook deliveries may have grown meanwhile, never shrunk)
    const bobAfter = await userRowCounts(sys.pool, bob.userId);
    for (const [t, n] of Object.entries(bobBefore)) expect(bobAfter[t], t).toBeGreaterThanOrEqual(t === 'gateway.rate_limits' ? 1 : n);
  });
});
