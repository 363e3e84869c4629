import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as a from '@tasksvc/auth/db/schema.ts';
import { insertSession } from '@tasksvc/auth/db/sessions.ts';
import { insertAccount } from '@tasksvc/auth/db/users.ts';
import { generateSessionToken, sessionTokenHash } from '@tasksvc/auth/domain/tokens.ts';
import { SESSION_COOKIE } from '@tasksvc/proto';
import { orm, type Pool } from '@tasksvc/runtime';
import * as n from '@tasksvc/notifier/db/schema.ts';
import * as s from '@tasksvc/scheduler/db/schema.ts';
import * as t from '@tasksvc/tasks/db/schema.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { until } from '../testenv/wait.ts';
import { userRowCounts } from './tables.ts';

/** A local receiver for webhooks and HTTP Alerts that answers 503: deliveries stay pending (retried), as they would at an outage. */
export async function startFailingReceiver(): Promise<{ url: string; hits(): number; close(): Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => res.writeHead(503).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits: () => hits,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/**
 * A browser session for the user through the auth service's own storage, as a full sign-in leaves it
 * (second factor proven): the cookie that carries it. `ageMinutes`: signed in (and proven) that long ago.
 */
export async function createSession(pool: Pool, authSecret: string, userId: string, opts: { ageMinutes?: number } = {}): Promise<string> {
  const token = generateSessionToken();
  const row = await insertSession(pool, { tokenHash: sessionTokenHash(authSecret, token), userId, expires: new Date(Date.now() + 86_400_000), userAgent: 'seed', ip: '127.0.0.1', secondFactorVerified: true });
  if (opts.ageMinutes) await pool.query(`UPDATE auth.sessions SET created_at = now() - make_interval(mins => $2), second_factor_verified_at = now() - make_interval(mins => $2) WHERE id = $1`, [row.id, opts.ageMinutes]);
  return `${SESSION_COOKIE}=${token}`;
}

export interface SeededUser {
  userId: string;
  email: string;
  authorization: string;
  cookie: string;
  taskIds: string[];
}

type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; json: unknown }>;

/**
 * A user with rows in every table that holds a user's id (tables.ts derives the list), made through
 * the API where a client can make them, and through the owning service's storage code or plain SQL
 * where only a sign-in ceremony, a reminder run or a provider would (sessions, second factors, a sent
 * reminder). Fails naming the tables still empty, so a table added later must be seeded here.
 * The system needs OUTBOUND_ALLOW_LIST=127.0.0.1, TOTP_ENCRYPTION_KEY and RATE_LIMIT_WRITES=true.
 */
export async function seedUserEverywhere(sys: { url: string; pool: Pool; authSecret: string }, receiverUrl: string, opts: { tasks?: number } = {}): Promise<SeededUser> {
  const { pool } = sys;
  const user = await createUserWithApiKey(pool, { email: `seed-${randomUUID().slice(0, 8)}@example.test` });
  const { userId } = user;
  const call: Call = async (method, path, body, extra: Record<string, string> = {}) => {
    const res = await fetch(`${sys.url}${path}`, {
      method,
      headers: { authorization: user.authorization, ...extra, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const json: unknown = text ? JSON.parse(text) : null;
    if (res.status >= 400) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
    return { status: res.status, json };
  };
  const ok = async <T>(method: string, path: string, body?: unknown) => (await call(method, path, body)).json as T;

  // The alert channel first: every achievement unlocked below is then delivered to it (a notification
  // handled before the channel existed would reach no channel, depending on timing). A channel test
  // leaves a delivery in the log.
  await ok('PUT', '/api/settings/notification-channels/http-alert', { config: { url: `${receiverUrl}/alert`, secret: 'alert-signing-secret' } });
  await call('POST', '/api/settings/notification-channels/http-alert/test');

  // tasks service, through its API
  await ok('PUT', '/api/settings/timezone', { timezone: 'Europe/Berlin' });
  const topic = await ok<{ topic: { id: string } }>('POST', '/api/topics', { title: 'Home', color: '#336699' });
  const taskIds: string[] = [];
  const make = async (body: Record<string, unknown>) => taskIds.push((await ok<{ task: { id: string } }>('POST', '/api/tasks', body)).task.id);
  await make({ title: 'Water the plants', type: 'RECURRING', recurrenceType: 'WEEKDAY', recurrenceWeekdays: [0, 3], recurrenceFixed: true, dueDate: '2026-03-02', topicId: topic.topic.id, notes: 'Both balconies — ümlauts too' });
  await make({ title: 'File taxes', priority: 'HIGH', dueDate: '2026-05-31', estimatedMinutes: 90 });
  await make({ title: 'Someday: learn the cello', priority: 'SOMEDAY' });
  await make({ title: 'Plan the trip', topicId: topic.topic.id });
  await make({ title: 'Book the train', parentId: taskIds[3], topicId: topic.topic.id, dueDate: '2027-04-01', dueTime: '18:30', reminders: [{ beforeDueMinutes: 30 }] });
  for (let i = taskIds.length; i < (opts.tasks ?? 0); i++) await make({ title: `Task ${i}` });
  await ok('GET', '/api/daily-quest');
  await ok('POST', `/api/tasks/${taskIds[0]}/complete`, {});
  await ok('POST', `/api/tasks/${taskIds[1]}/complete`, {});
  await ok('POST', `/api/tasks/${taskIds[2]}/postpone`, {});
  await ok('POST', '/api/energy-checkin', { level: 'HIGH' });
  // sent with an Idempotency-Key, as a client that retries would
  await call('POST', '/api/wishlist', { title: 'New headphones', price: 500 }, { 'idempotency-key': `seed-${userId}` });
  await ok('PUT', '/api/settings/vacation-mode', { active: true, endDate: '2999-01-01' });
  await ok('PUT', '/api/settings/notifications', { enabled: true, time: '08:30', weeklyReviewEnabled: true });

  // notifier and webhook services, through their APIs (a channel test leaves a delivery in the log)
  await ok('POST', '/api/settings/webhooks', { url: `${receiverUrl}/hook`, secret: 'webhook-signing-secret' });
  await make({ title: 'Seen by the webhook' });

  // what only a ceremony, a provider or a reminder run would make
  const cookie = await createSession(pool, sys.authSecret, userId);
  await insertAccount(pool, { userId, type: 'oidc', provider: 'oidc', providerAccountId: `sub-${userId}` });
  const db = orm(pool);
  await db.insert(a.totpCredentials).values({ userId, secretEncrypted: 'iv:tag:ciphertext', enabledAt: new Date() });
  await db.insert(a.totpBackupCodes).values([0, 1, 2].map(() => ({ userId, codeHash: randomBytes(32).toString('hex') })));
  await db.insert(a.authenticators).values({ userId, credentialId: randomBytes(16).toString('base64url'), publicKey: randomBytes(65), name: 'Laptop' });
  await db.insert(a.webauthnChallenges).values({ purpose: 'register', userId, challenge: randomBytes(32).toString('base64url'), expiresAt: new Date(Date.now() + 300_000) });
  await db.insert(a.secondFactorAttempts).values({ userId, windowStart: new Date(), attempts: 1 });
  // a push subscription is only sent to with VAPID keys (the test systems have none): no traffic
  await db.insert(n.pushSubscriptions).values({ id: randomUUID(), userId, endpoint: 'http://127.0.0.1:9/push/device', p256dh: 'p'.repeat(87), auth: 'a'.repeat(22), userAgent: 'seed' });
  await db.insert(t.reminderActionUses).values({ nonce: randomBytes(16).toString('base64url'), userId, taskId: taskIds[1]!, action: 'done' });
  // a task as a CalDAV client wrote it, a sync record of a deleted one, and an import's traces
  await db.insert(t.caldavObjects).values({ taskId: taskIds[2]!, userId, name: 'cello.ics', uid: `client-uid-${userId}`, kept: { props: [['x-client-flag', {}, 'text', 'kept']], components: [] } });
  await db.insert(t.caldavTombstones).values({ userId, topicId: null, name: 'gone.ics' });
  const importId = randomUUID();
  await db.insert(t.imports).values({ id: importId, userId, status: 'done', format: 'todoist-csv', fileName: 'todoist.csv', bytes: 10, sha256: 'a'.repeat(64), referenceDate: '2026-03-01', timeZone: 'Europe/Berlin', planDigest: 'b'.repeat(64), preview: {}, expiresAt: new Date(Date.now() + 86_400_000) });
  await db.insert(t.importChunks).values({ importId, userId, seq: 0, data: Buffer.from('TYPE,CONTENT\n') });
  await db.insert(t.importSources).values({ userId, sourceKey: `todoist:${importId}`, kind: 'task', targetId: taskIds[2]!, importId });
  await db.insert(s.cronSent).values({ dedupeKey: `streak:${userId}:2026-03-01`, job: 'streak-reminder', bucket: new Date('2026-03-01T19:00:00Z'), userId });

  // the webhook service ingests the task events on its own time, the notifier the achievements' notifications
  // (one delivery each, besides the channel test): the export then sees every row it will ever have
  const counts = await until(async () => {
    const c = await userRowCounts(pool, userId);
    const settled = c['notifier.deliveries'] === 1 + c['tasks.user_achievements']!;
    return settled && Object.values(c).every((v) => v > 0) ? c : null;
  }, 'a row of the seeded user in every user table, a delivery for each achievement', 30_000).catch(async () => {
    const c = await userRowCounts(pool, userId);
    throw new Error(`no row of the seeded user in: ${Object.entries(c).filter(([, v]) => v === 0).map(([k]) => k).join(', ')} (seed them in tools/user-data/seed.ts)`);
  });
  void counts;
  return { userId, email: user.email, authorization: user.authorization, cookie, taskIds };
}
