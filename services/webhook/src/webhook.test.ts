import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { notificationRequested, taskEvent, taskEvents, type NotificationRequest, type TaskEventName, type TaskEventPayload, type WebhookDelivery } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, startWebhookHarness, until, type Harness, type Received, type Receiver } from '../test/support.ts';

/** What a receiver does: HMAC over the raw body bytes, compared in constant time. */
function verify(secret: string, req: Received): boolean {
  const header = String(req.headers['x-service-signature'] ?? '');
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(req.raw).digest('hex')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A task event's payload, made by the producer's own mapper (its owner travels beside it, see publish). */
function payload(event: TaskEventName, title = 'Write report'): TaskEventPayload {
  return taskEvent(event, { id: randomUUID(), userId: randomUUID(), title, type: 'ONE_TIME', priority: 'HIGH', dueDate: '2026-12-01', createdAt: new Date() }).payload;
}

const KEY = randomBytes(32).toString('hex');
let h: Harness;
let rx: Receiver;
const alice = randomUUID();
const bob = randomUUID();

beforeAll(async () => {
  rx = await startReceiver();
  h = await startWebhookHarness({ OUTBOUND_ALLOW_LIST: '127.0.0.1', TOTP_ENCRYPTION_KEY: KEY, WEBHOOK_RETRY_SCHEDULE: '0.05,0.05,0.05,0.05' });
});
afterAll(async () => {
  await h?.stop();
  await rx?.close();
});

const publish = async (userId: string, p: TaskEventPayload) => h.bus.publish(taskEvents[p.event], { userId, payload: p }, randomUUID());
const deliveriesOf = async (userId: string, id: string) => (await h.call('GET', `/api/settings/webhooks/${id}/deliveries`, userId)).json.deliveries as WebhookDelivery[];

describe('webhook endpoints API', () => {
  it('creates, reads, updates and deletes an endpoint; secrets never come back', async () => {
    const created = await h.call('POST', '/api/settings/webhooks', alice, { url: `${rx.url}/crud`, secret: 'a-long-secret', events: ['task.created'] });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ url: `${rx.url}/crud`, events: ['task.created'], hasSecret: true, enabled: true, disabledReason: null, failingSince: null });
    expect(JSON.stringify(created.json)).not.toContain('a-long-secret');
    const id = created.json.id as string;
    const stored = await h.pool.query('SELECT secret_enc FROM webhook.endpoints WHERE id = $1', [id]);
    expect(stored.rows[0].secret_enc).not.toContain('a-long-secret');
    expect((await h.call('GET', `/api/settings/webhooks/${id}`, alice)).json.id).toBe(id);
    const list = await h.call('GET', '/api/settings/webhooks', alice);
    expect(list.json.webhooks.map((w: { id: string }) => w.id)).toContain(id);
    const patched = await h.call('PATCH', `/api/settings/webhooks/${id}`, alice, { events: [], secret: null, enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ events: [], hasSecret: false, enabled: false });
    expect((await h.call('DELETE', `/api/settings/webhooks/${id}`, alice)).status).toBe(204);
    expect((await h.call('GET', `/api/settings/webhooks/${id}`, alice)).status).toBe(404);
  });

  it('names the bad field: URL scheme, private target, unknown event, unknown property', async () => {
    const ftp = await h.call('POST', '/api/settings/webhooks', alice, { url: 'ftp://127.0.0.1/x' });
    expect(ftp.status).toBe(400);
    expect(ftp.json.issues[0].path).toBe('body.url');
    const priv = await h.call('POST', '/api/settings/webhooks', alice, { url: 'https://10.1.2.3/hook' });
    expect(priv.status).toBe(400);
    expect(priv.json.issues[0]).toMatchObject({ path: 'body.url' });
    expect(priv.json.issues[0].message).toMatch(/private/);
    const meta = await h.call('POST', '/api/settings/webhooks', alice, { url: 'http://169.254.169.254/latest/meta-data' });
    expect(meta.status).toBe(400);
    const ev = await h.call('POST', '/api/settings/webhooks', alice, { url: `${rx.url}/x`, events: ['task.exploded'] });
    expect(ev.status).toBe(400);
    expect(ev.json.issues[0].path).toBe('body.events.0');
    const extra = await h.call('POST', '/api/settings/webhooks', alice, { url: `${rx.url}/x`, colour: 'red' });
    expect(extra.status).toBe(400);
    expect((await h.call('POST', '/api/settings/webhooks', alice, { url: `${rx.url}/x`, secret: 'short' })).json.issues[0].path).toBe('body.secret');
  });

  it("another user's endpoint is not found, whatever the operation", async () => {
    const { json } = await h.call('POST', '/api/settings/webhooks', alice, { url: `${rx.url}/mine` });
    for (const [method, url, body] of [
      ['GET', `/api/settings/webhooks/${json.id}`],
      ['PATCH', `/api/settings/webhooks/${json.id}`, { enabled: false }],
      ['POST', `/api/settings/webhooks/${json.id}/test`],
      ['GET', `/api/settings/webhooks/${json.id}/deliveries`],
      ['DELETE', `/api/settings/webhooks/${json.id}`],
    ] as const) {
      const res = await h.call(method, url, bob, body);
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.json.code).toBe('WEBHOOK_NOT_FOUND');
    }
    expect((await h.call('GET', '/api/settings/webhooks', bob)).json.webhooks).toEqual([]);
    expect((await h.call('GET', '/api/settings/webhooks', alice)).json.webhooks.some((w: { id: string }) => w.id === json.id)).toBe(true);
    expect((await h.app.inject({ method: 'GET', url: '/api/settings/webhooks' })).statusCode).toBe(401);
  });

  it('refuses the 11th endpoint with LIMIT_EXCEEDED', async () => {
    const carol = randomUUID();
    for (let i = 0; i < 10; i++) expect((await h.call('POST', '/api/settings/webhooks', carol, { url: `${rx.url}/n${i}` })).status).toBe(201);
    const eleventh = await h.call('POST', '/api/settings/webhooks', carol, { url: `${rx.url}/n10` });
    expect(eleventh.status).toBe(422);
    expect(eleventh.json.code).toBe('LIMIT_EXCEEDED');
    expect(eleventh.json.message).toMatch(/10/);
  });
});

describe('task-event deliveries', () => {
  it('signs the exact body; a receiver verifying in constant time accepts it, a wrong secret does not; filters apply', async () => {
    const dave = randomUUID();
    const secret = 'whsec-for-dave-0123';
    const all = await h.call('POST', '/api/settings/webhooks', dave, { url: `${rx.url}/dave-all`, secret });
    const onlyDone = await h.call('POST', '/api/settings/webhooks', dave, { url: `${rx.url}/dave-done`, events: ['task.completed'] });
    const sent: TaskEventPayload[] = [payload('task.created', 'Grüße 🎉 "quoted"'), payload('task.updated'), payload('task.completed'), payload('task.deleted')];
    for (const p of sent) await publish(dave, p);
    const got = await until(async () => {
      const a = rx.requests.filter((r) => r.path === '/dave-all');
      return a.length >= 4 && rx.requests.some((r) => r.path === '/dave-done') ? a : null;
    }, 'deliveries to dave');
    for (const req of got) {
      expect(verify(secret, req)).toBe(true);
      expect(verify('another-secret-xx', req)).toBe(false);
      const flipped = Buffer.from(req.raw);
      flipped[10] = flipped[10]! ^ 1;
      expect(verify(secret, { ...req, raw: flipped })).toBe(false);
      const body = JSON.parse(req.raw.toString('utf8'));
      const original = sent.find((p) => p.task.id === body.task.id)!;
      expect(body).toEqual(original);
      expect(Object.keys(body)).toEqual(['event', 'timestamp', 'task']);
      expect(req.headers['x-service-event']).toBe(original.event);
      expect(req.headers['x-service-delivery']).toMatch(/^[0-9a-f-]{36}$/);
      expect(req.headers['content-type']).toBe('application/json');
    }
    const done = rx.requests.filter((r) => r.path === '/dave-done');
    expect(done.map((r) => r.headers['x-service-event'])).toEqual(['task.completed']);
    expect(done[0]!.headers['x-service-signature']).toBeUndefined();
    // the receiver sees a request before the worker records its outcome: wait for the recorded outcome
    const log = await until(async () => {
      const l = await deliveriesOf(dave, all.json.id);
      return l.length === 4 && l.every((d) => d.status !== 'pending') ? l : null;
    }, 'dave deliveries recorded');
    expect(log.every((d) => d.status === 'delivered' && d.responseStatus === 200 && d.attempts === 1)).toBe(true);
    const doneLog = await until(async () => {
      const l = await deliveriesOf(dave, onlyDone.json.id);
      return l.length > 0 && l.every((d) => d.status !== 'pending') ? l : null;
    }, 'dave-done delivery recorded');
    expect(doneLog.map((d) => [d.event, d.status])).toEqual([['task.completed', 'delivered']]);
  });

  it('a redelivered bus message does not create a second delivery', async () => {
    const erin = randomUUID();
    const ep = await h.call('POST', '/api/settings/webhooks', erin, { url: `${rx.url}/erin` });
    const p = payload('task.created');
    const msgId = randomUUID();
    await h.bus.publish(taskEvents['task.created'], { userId: erin, payload: p }, msgId);
    await until(async () => (await deliveriesOf(erin, ep.json.id)).some((d) => d.status === 'delivered'), 'erin delivered');
    // a second consumer group sees it again as a JetStream redelivery would: ingest directly by the same id
    const { ingestEvent } = await import('./db/deliveries.ts');
    const client = await h.pool.connect();
    try {
      expect(await ingestEvent(client, { msgId, userId: erin, event: p.event, body: JSON.stringify(p) })).toEqual({ added: 0, hosts: [] });
    } finally {
      client.release();
    }
    expect(await deliveriesOf(erin, ep.json.id)).toHaveLength(1);
  });

  it('ingests a batch of events in one statement: per-event counts, filters, a repeated message id counted once', async () => {
    const { ingestEvents } = await import('./db/deliveries.ts');
    const [gail, hank, nobody] = [randomUUID(), randomUUID(), randomUUID()];
    await h.call('POST', '/api/settings/webhooks', gail, { url: `${rx.url}/gail-a` });
    await h.call('POST', '/api/settings/webhooks', gail, { url: `${rx.url}/gail-b`, events: ['task.created'] });
    await h.call('POST', '/api/settings/webhooks', hank, { url: `${rx.url}/hank`, events: ['task.deleted'] });
    const [created, updated, deleted] = [payload('task.created'), payload('task.updated'), payload('task.deleted')];
    const ev = (msgId: string, userId: string, p: TaskEventPayload) => ({ msgId, userId, event: p.event, body: JSON.stringify(p) });
    const ids = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const batch = [ev(ids[0]!, gail, created), ev(ids[1]!, gail, updated), ev(ids[2]!, hank, deleted), ev(ids[3]!, nobody, created), ev(ids[0]!, gail, created)];
    // with the receiving host of what was added (both of gail's endpoints are on one)
    const host = new URL(rx.url).host;
    const none = { added: 0, hosts: [] };
    expect(await ingestEvents(h.pool, batch)).toEqual([{ added: 2, hosts: [host] }, { added: 1, hosts: [host] }, { added: 1, hosts: [host] }, none, none]);
    // the same batch again (a redelivery) adds nothing
    expect(await ingestEvents(h.pool, batch)).toEqual([none, none, none, none, none]);
    const { rows } = await h.pool.query<{ msg_id: string; n: number }>(
      'SELECT ev.msg_id, count(d.id)::int AS n FROM webhook.events ev LEFT JOIN webhook.deliveries d ON d.event_msg_id = ev.msg_id WHERE ev.msg_id = ANY($1) GROUP BY ev.msg_id',
      [ids],
    );
    expect(Object.fromEntries(rows.map((r) => [r.msg_id, r.n]))).toEqual({ [ids[0]!]: 2, [ids[1]!]: 1, [ids[2]!]: 1 });
  });

  it('ingests a batch of many events, mostly of users without an endpoint, the same as a few (the owners read first)', async () => {
    const { ingestEvents, SUBSCRIBERS_FIRST_FROM } = await import('./db/deliveries.ts');
    const [jill, kurt] = [randomUUID(), randomUUID()];
    await h.call('POST', '/api/settings/webhooks', jill, { url: `${rx.url}/jill` });
    const off = (await h.call('POST', '/api/settings/webhooks', kurt, { url: `${rx.url}/kurt` })).json.id as string;
    expect((await h.call('PATCH', `/api/settings/webhooks/${off}`, kurt, { enabled: false })).status).toBe(200);
    const created = payload('task.created');
    const ev = (userId: string) => ({ msgId: randomUUID(), userId, event: created.event, body: JSON.stringify(created) });
    const host = new URL(rx.url).host;
    const none = { added: 0, hosts: [] };
    // only users without an enabled endpoint: nothing is stored
    const nobodys = Array.from({ length: SUBSCRIBERS_FIRST_FROM }, () => ev(randomUUID()));
    expect(await ingestEvents(h.pool, [...nobodys, ev(kurt)])).toEqual(Array.from({ length: SUBSCRIBERS_FIRST_FROM + 1 }, () => none));
    // jill's events among them are stored with their deliveries, her id spelt in capitals too (a uuid, as PostgreSQL compares it)
    const mixed = [ev(randomUUID()), ev(jill), ev(kurt), ev(jill.toUpperCase()), ...Array.from({ length: SUBSCRIBERS_FIRST_FROM }, () => ev(randomUUID()))];
    expect(await ingestEvents(h.pool, mixed)).toEqual(mixed.map((e) => (e.userId.toLowerCase() === jill ? { added: 1, hosts: [host] } : none)));
    const { rows } = await h.pool.query<{ user_id: string }>('SELECT user_id FROM webhook.events WHERE msg_id = ANY($1)', [[...nobodys, ...mixed].map((e) => e.msgId)]);
    expect(rows.map((r) => r.user_id)).toEqual([jill, jill]);
  });

  it('records a batch of completions in one statement, except one whose lease was lost', async () => {
    const { attemptLog, completeMany } = await import('./db/deliveries.ts');
    const ivy = randomUUID();
    const ep = await h.call('POST', '/api/settings/webhooks', ivy, { url: `${rx.url}/ivy` });
    const p = payload('task.created');
    const ids = [randomUUID(), randomUUID()];
    await h.pool.query('INSERT INTO webhook.events (msg_id, user_id, event, body) SELECT unnest($1::text[]), $2, $3, $4', [ids, ivy, p.event, JSON.stringify(p)]);
    // leased already (as by a claim), so the background worker leaves them alone
    const { rows } = await h.pool.query<{ id: string; lease: string }>(
      `INSERT INTO webhook.deliveries (id, event_msg_id, endpoint_id, user_id, event, attempts, lease, locked_until)
       SELECT gen_random_uuid(), unnest($1::text[]), $2, $3, $4, 1, gen_random_uuid(), clock_timestamp() + interval '1 minute' RETURNING id, lease`,
      [ids, ep.json.id, ivy, p.event],
    );
    expect(rows).toHaveLength(2);
    const done = (id: string, lease: string) => ({ id, lease, status: 'delivered' as const, outcome: 'delivered', responseStatus: 204, error: null, durationMs: 3, startedAt: new Date(), nextAttemptAt: null, healthyEndpoint: ep.json.id });
    expect(await completeMany(h.pool, [done(rows[0]!.id, rows[0]!.lease), done(rows[1]!.id, randomUUID())])).toEqual([true, false]);
    const after = await h.pool.query<{ id: string; status: string; lease: string | null }>('SELECT id, status, lease FROM webhook.deliveries WHERE id = ANY($1)', [rows.map((r) => r.id)]);
    const byId = new Map(after.rows.map((r) => [r.id, r]));
    expect(byId.get(rows[0]!.id)).toMatchObject({ status: 'delivered', lease: null });
    expect(byId.get(rows[1]!.id)).toMatchObject({ status: 'pending', lease: rows[1]!.lease });
    expect(await attemptLog(h.pool, rows[0]!.id)).toMatchObject([{ attempt: 1, outcome: 'delivered', responseStatus: 204, durationMs: 3 }]);
    expect(await attemptLog(h.pool, rows[1]!.id)).toEqual([]);
  });

  it('stores nothing for an event no endpoint wants (a user without webhooks, or an endpoint filtering it out)', async () => {
    const { ingestEvent } = await import('./db/deliveries.ts');
    const nobody = randomUUID();
    const picky = randomUUID();
    await h.call('POST', '/api/settings/webhooks', picky, { url: `${rx.url}/picky`, events: ['task.completed'] });
    const p = payload('task.created');
    const ids = [randomUUID(), randomUUID()];
    expect(await ingestEvent(h.pool, { msgId: ids[0]!, userId: nobody, event: p.event, body: JSON.stringify(p) })).toEqual({ added: 0, hosts: [] });
    expect(await ingestEvent(h.pool, { msgId: ids[1]!, userId: picky, event: p.event, body: JSON.stringify(p) })).toEqual({ added: 0, hosts: [] });
    const { rows } = await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook.events WHERE msg_id = ANY($1)', [ids]);
    expect(rows[0]!.n).toBe(0);
  });

  it('retries redirects and 5xx with the same delivery id until a 2xx', async () => {
    const frank = randomUUID();
    const ep = await h.call('POST', '/api/settings/webhooks', frank, { url: `${rx.url}/flaky` });
    let n = 0;
    const prev = rx.respond;
    rx.respond = (req) => (req.path === '/flaky' ? (++n === 1 ? { status: 308, headers: { location: '/elsewhere' } } : n === 2 ? { status: 503 } : { status: 204 }) : prev(req));
    await publish(frank, payload('task.updated'));
    const d = await until(async () => {
      const l = await deliveriesOf(frank, ep.json.id);
      return l[0]?.status === 'delivered' ? l[0] : null;
    }, 'flaky delivered');
    rx.respond = prev;
    expect(d).toMatchObject({ status: 'delivered', attempts: 3, responseStatus: 204 });
    const reqs = rx.requests.filter((r) => r.path === '/flaky');
    expect(reqs).toHaveLength(3);
    expect(new Set(reqs.map((r) => r.headers['x-service-delivery'])).size).toBe(1);
    expect(reqs.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2', '3']);
    expect(rx.requests.some((r) => r.path === '/elsewhere')).toBe(false);
    // the success ended the endpoint's failure streak
    expect((await h.call('GET', `/api/settings/webhooks/${ep.json.id}`, frank)).json).toMatchObject({ enabled: true, failingSince: null });
    const { attemptLog } = await import('./db/deliveries.ts');
    expect((await attemptLog(h.pool, d.id)).map(({ attempt, outcome, responseStatus }) => ({ attempt, outcome, responseStatus }))).toEqual([
      { attempt: 1, outcome: 'retry', responseStatus: 308 },
      { attempt: 2, outcome: 'retry', responseStatus: 503 },
      { attempt: 3, outcome: 'delivered', responseStatus: 204 },
    ]);
  });

  it('honours Retry-After on 429, fails a 400 at once, and gives up after the schedule', async () => {
    const gina = randomUUID();
    const slow = await h.call('POST', '/api/settings/webhooks', gina, { url: `${rx.url}/throttle`, events: ['task.created'] });
    const bad = await h.call('POST', '/api/settings/webhooks', gina, { url: `${rx.url}/bad`, events: ['task.updated'] });
    const down = await h.call('POST', '/api/settings/webhooks', gina, { url: `${rx.url}/down`, events: ['task.deleted'] });
    const prev = rx.respond;
    rx.respond = (req) =>
      req.path === '/throttle' ? { status: 429, headers: { 'retry-after': '3600' } } : req.path === '/bad' ? { status: 400 } : req.path === '/down' ? { status: 500 } : prev(req);
    const before = Date.now();
    await publish(gina, payload('task.created'));
    await publish(gina, payload('task.updated'));
    await publish(gina, payload('task.deleted'));
    const t = await until(async () => {
      const l = await deliveriesOf(gina, slow.json.id);
      return l[0]?.attempts === 1 && l[0].lastAttemptAt ? l[0] : null;
    }, 'throttled attempt');
    expect(t.status).toBe('pending');
    expect(Date.parse(t.nextAttemptAt ?? '') - before).toBeGreaterThanOrEqual(3_590_000);
    const b = await until(async () => {
      const l = await deliveriesOf(gina, bad.json.id);
      return l[0]?.status === 'failed' ? l[0] : null;
    }, '400 failed');
    expect(b).toMatchObject({ attempts: 1, responseStatus: 400, error: 'HTTP 400' });
    const d = await until(async () => {
      const l = await deliveriesOf(gina, down.json.id);
      return l[0]?.status === 'failed' ? l[0] : null;
    }, 'retries exhausted');
    rx.respond = prev;
    expect(d.attempts).toBe(5);
    expect(d.error).toMatch(/gave up after 5 attempts/);
    expect((await h.call('GET', `/api/settings/webhooks/${down.json.id}`, gina)).json.failingSince).not.toBeNull();
  });

  it('410 Gone disables the endpoint and notifies its owner; re-enabling resumes delivery', async () => {
    const hank = randomUUID();
    const notes: NotificationRequest[] = [];
    const sub = await h.bus.consume(notificationRequested, async (n) => void notes.push(n), { durable: 'webhook-test-notes' });
    const ep = await h.call('POST', '/api/settings/webhooks', hank, { url: `${rx.url}/gone` });
    const prev = rx.respond;
    rx.respond = (req) => (req.path === '/gone' ? { status: 410 } : prev(req));
    await publish(hank, payload('task.created'));
    const disabled = await until(async () => {
      const e = (await h.call('GET', `/api/settings/webhooks/${ep.json.id}`, hank)).json;
      return e.enabled === false ? e : null;
    }, 'endpoint disabled');
    expect(disabled.disabledReason).toMatch(/410/);
    const note = await until(async () => notes.find((n) => n.userId === hank), 'owner notified');
    expect(note).toMatchObject({ title: 'Webhook endpoint disabled', tag: 'webhook-disabled' });
    expect(note.body).toContain(`${rx.url}/gone`);
    // nothing is queued for a disabled endpoint
    await publish(hank, payload('task.updated'));
    expect(await deliveriesOf(hank, ep.json.id)).toHaveLength(1);
    rx.respond = prev;
    expect((await h.call('PATCH', `/api/settings/webhooks/${ep.json.id}`, hank, { enabled: true })).json).toMatchObject({ enabled: true, disabledReason: null });
    await publish(hank, payload('task.deleted'));
    await until(async () => (await deliveriesOf(hank, ep.json.id)).some((d) => d.event === 'task.deleted' && d.status === 'delivered'), 'delivery after re-enable');
    await sub.stop();
  });

  it('a delivering attempt logged as a row (as before the log moved to the delivery row) counts once, and the delivery can be sent again', async () => {
    const { attemptLog } = await import('./db/deliveries.ts');
    const kim = randomUUID();
    const ep = await h.call('POST', '/api/settings/webhooks', kim, { url: `${rx.url}/kim` });
    const test = await h.call('POST', `/api/settings/webhooks/${ep.json.id}/test`, kim);
    expect(test.json).toMatchObject({ status: 'delivered', attempts: 1 });
    await h.pool.query(
      "INSERT INTO webhook.attempts (delivery_id, attempt, started_at, outcome, response_status, duration_ms) SELECT id, attempts, last_attempt_at, 'delivered', response_status, 1 FROM webhook.deliveries WHERE id = $1",
      [test.json.id],
    );
    expect(await attemptLog(h.pool, test.json.id)).toMatchObject([{ attempt: 1, outcome: 'delivered' }]);
    const again = await h.call('POST', `/api/settings/webhooks/${ep.json.id}/deliveries/${test.json.id}/redeliver`, kim);
    expect(again).toMatchObject({ status: 200, json: { status: 'delivered', attempts: 2 } });
    expect((await attemptLog(h.pool, test.json.id)).map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'delivered'],
      [2, 'delivered'],
    ]);
  });

  it('test sends a synthetic task.test now; redeliver sends a logged delivery again with the same id', async () => {
    const ivy = randomUUID();
    const secret = 'ivy-secret-123456';
    const ep = await h.call('POST', '/api/settings/webhooks', ivy, { url: `${rx.url}/ivy`, secret });
    const test = await h.call('POST', `/api/settings/webhooks/${ep.json.id}/test`, ivy);
    expect(test.status).toBe(200);
    expect(test.json).toMatchObject({ event: 'task.test', status: 'delivered', attempts: 1, responseStatus: 200 });
    const req = rx.requests.filter((r) => r.path === '/ivy').at(-1)!;
    expect(verify(secret, req)).toBe(true);
    expect(JSON.parse(req.raw.toString()).event).toBe('task.test');
    expect(req.headers['x-service-event']).toBe('task.test');
    const again = await h.call('POST', `/api/settings/webhooks/${ep.json.id}/deliveries/${test.json.id}/redeliver`, ivy);
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ id: test.json.id, status: 'delivered', attempts: 2 });
    const ivyReqs = rx.requests.filter((r) => r.path === '/ivy');
    expect(ivyReqs).toHaveLength(2);
    expect(ivyReqs[0]!.raw.equals(ivyReqs[1]!.raw)).toBe(true);
    expect(ivyReqs[1]!.headers['x-service-delivery']).toBe(test.json.id);
    // the first delivering attempt stays in the log when the row takes the second
    const { attemptLog } = await import('./db/deliveries.ts');
    expect((await attemptLog(h.pool, test.json.id)).map(({ attempt, outcome, responseStatus }) => ({ attempt, outcome, responseStatus }))).toEqual([
      { attempt: 1, outcome: 'delivered', responseStatus: 200 },
      { attempt: 2, outcome: 'delivered', responseStatus: 200 },
    ]);
    expect((await h.call('POST', `/api/settings/webhooks/${ep.json.id}/deliveries/${randomUUID()}/redeliver`, ivy)).status).toBe(404);
    expect((await h.call('POST', `/api/settings/webhooks/${ep.json.id}/deliveries/${test.json.id}/redeliver`, bob)).status).toBe(404);
  });
});

describe('without SECRETS_KEYRING, and with a short failure window', () => {
  let h2: Harness;
  let rx2: Receiver;
  beforeAll(async () => {
    rx2 = await startReceiver();
    rx2.respond = () => ({ status: 500 });
    // 0.0003 h ≈ 1 s of continuous failure disables the endpoint
    h2 = await startWebhookHarness({ SECRETS_KEYRING: undefined, OUTBOUND_ALLOW_LIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: Array(40).fill('0.1').join(','), WEBHOOK_DISABLE_AFTER_HOURS: '0.0003' });
  });
  afterAll(async () => {
    await h2?.stop();
    await rx2?.close();
  });

  it('stores a secret sealed under a key derived from AUTH_SECRET, and signs with it', async () => {
    const res = await h2.call('POST', '/api/settings/webhooks', alice, { url: `${rx2.url}/s`, secret: 'a-long-secret' });
    expect(res.status).toBe(201);
    const { rows } = await h2.pool.query<{ v: string }>('SELECT secret_enc AS v FROM webhook.endpoints WHERE id = $1', [res.json.id]);
    expect(rows[0]!.v).toMatch(/^kr1:auth-secret:/);
    await h2.call('POST', `/api/settings/webhooks/${res.json.id}/test`, alice);
    const sent = await until(async () => rx2.requests.find((r) => r.path === '/s') ?? null, 'the test delivery');
    expect(verify('a-long-secret', sent)).toBe(true);
  });

  it('an endpoint failing for the whole window is disabled and its owner notified once', async () => {
    const jo = randomUUID();
    const notes: NotificationRequest[] = [];
    const sub = await h2.bus.consume(notificationRequested, async (n) => void notes.push(n), { durable: 'webhook-test-notes-2' });
    const ep = await h2.call('POST', '/api/settings/webhooks', jo, { url: `${rx2.url}/failing` });
    await h2.bus.publish(taskEvents['task.created'], { userId: jo, payload: payload('task.created') }, randomUUID());
    const e = await until(async () => {
      const v = (await h2.call('GET', `/api/settings/webhooks/${ep.json.id}`, jo)).json;
      return v.enabled === false ? v : null;
    }, 'disabled after the window');
    expect(e.disabledReason).toMatch(/failed for 0.0003 hours/);
    await until(async () => notes.some((n) => n.userId === jo), 'owner notified');
    expect(notes.filter((n) => n.userId === jo)).toHaveLength(1);
    await sub.stop();
  });
});
