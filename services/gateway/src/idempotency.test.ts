import { randomUUID } from 'node:crypto';
import type { Subscription } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { fileNats, quietLogger, testSystemConfig, zoneAtLocalHour } from '../../../tools/testenv/index.ts';
import { serveTestIdentities } from '../../tasks/test/support.ts';
import { tasksService } from '../../tasks/src/service.ts';

/**
 * Idempotency-Key end to end: HTTP → gateway (the key table in PostgreSQL) → NATS → tasks service.
 * Identity comes from the tasks tests' TEST DOUBLE of auth.identity.resolve.
 */

const nats = fileNats();
let system: RunningSystem;
let identity: Subscription;

beforeAll(async () => {
  const config = await testSystemConfig({}, { natsUrl: nats.url() });
  system = await startSystem(config, { log: quietLogger(), services: [tasksService, ALL_SERVICES.find((s) => s.name === 'gateway')!] });
  identity = serveTestIdentities(system.bus);
});

afterAll(async () => {
  await identity?.stop();
  await system?.stop();
});

async function call(method: string, path: string, opts: { as: string; key?: string; body?: unknown }) {
  const headers: Record<string, string> = { authorization: `Bearer test-${opts.as}` };
  if (opts.key !== undefined) headers['idempotency-key'] = opts.key;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${system.url}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, replayed: res.headers.get('idempotent-replayed'), retryAfter: res.headers.get('retry-after') };
}
const titles = async (as: string) => ((await call('GET', '/api/tasks?limit=500', { as })).body.tasks as { title: string }[]).map((t) => t.title).sort();

describe('Idempotency-Key on writes', () => {
  it('a retried create gets the first answer again and creates nothing more', async () => {
    const u = randomUUID();
    const key = randomUUID();
    const first = await call('POST', '/api/tasks', { as: u, key, body: { title: 'Pay rent' } });
    expect(first.status).toBe(201);
    expect(first.replayed).toBeNull();
    const again = await call('POST', '/api/tasks', { as: u, key, body: { title: 'Pay rent' } });
    expect(again).toMatchObject({ status: 201, replayed: 'true' });
    expect(again.body).toEqual(first.body);
    expect(await titles(u)).toEqual(['Pay rent']);
    // without a key every request runs
    await call('POST', '/api/tasks', { as: u, body: { title: 'Pay rent' } });
    expect(await titles(u)).toEqual(['Pay rent', 'Pay rent']);
  });

  it('a retried completion pays its coins once; a retried DELETE answers as the first did', async () => {
    const u = randomUUID();
    // noon: no secret achievement (night_owl, early_bird) adds its coins
    expect((await call('PUT', '/api/settings/timezone', { as: u, body: { timezone: zoneAtLocalHour(12) } })).status).toBe(200);
    const t = (await call('POST', '/api/tasks', { as: u, body: { title: 'Ten', coinValue: 10 } })).body.task;
    const key = randomUUID();
    const done = await call('POST', `/api/tasks/${t.id}/complete`, { as: u, key, body: {} });
    expect(done.status).toBe(200);
    const retried = await call('POST', `/api/tasks/${t.id}/complete`, { as: u, key, body: {} });
    expect(retried).toMatchObject({ status: 200, replayed: 'true', body: done.body });
    // 10 task coins + tasks_1 (10), once
    expect((await call('GET', '/api/stats', { as: u })).body.coins).toBe(20);
    // a new key for the same completion is a new request: the task is already completed
    expect((await call('POST', `/api/tasks/${t.id}/complete`, { as: u, key: randomUUID(), body: {} })).status).toBe(409);

    const delKey = randomUUID();
    expect((await call('DELETE', `/api/tasks/${t.id}`, { as: u, key: delKey })).status).toBe(200);
    expect(await call('DELETE', `/api/tasks/${t.id}`, { as: u, key: delKey })).toMatchObject({ status: 200, replayed: 'true', body: { success: true } });
    expect((await call('DELETE', `/api/tasks/${t.id}`, { as: u, key: randomUUID() })).status).toBe(404);
  });

  it('the same key with another request is a clear 422 and changes nothing', async () => {
    const u = randomUUID();
    const key = randomUUID();
    await call('POST', '/api/tasks', { as: u, key, body: { title: 'One' } });
    const other = await call('POST', '/api/tasks', { as: u, key, body: { title: 'Two' } });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    const t = (await call('GET', '/api/tasks', { as: u })).body.tasks[0];
    expect((await call('PATCH', `/api/tasks/${t.id}`, { as: u, key, body: { title: 'Two' } })).status).toBe(422);
    expect(await titles(u)).toEqual(['One']);
  });

  it('keys are per user; a refused request is answered the same on retry; a bad key is a 400 naming the header', async () => {
    const a = randomUUID();
    const b = randomUUID();
    const key = 'shared-key-1';
    await call('POST', '/api/tasks', { as: a, key, body: { title: 'A' } });
    expect((await call('POST', '/api/tasks', { as: b, key, body: { title: 'A' } })).replayed).toBeNull();
    expect(await titles(b)).toEqual(['A']);

    const bad = await call('POST', '/api/tasks', { as: a, key: 'k-bad-body', body: { title: '' } });
    expect(bad.status).toBe(400);
    expect(await call('POST', '/api/tasks', { as: a, key: 'k-bad-body', body: { title: '' } })).toMatchObject({ status: 400, replayed: 'true', body: bad.body });

    const malformed = await call('POST', '/api/tasks', { as: a, key: 'x'.repeat(256), body: { title: 'long key' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.issues[0].path).toBe('headers.idempotency-key');
    expect(await titles(a)).toEqual(['A']);
  });

  it('a key is kept 24 hours: after that the same key runs again', async () => {
    const u = randomUUID();
    const key = randomUUID();
    await call('POST', '/api/tasks', { as: u, key, body: { title: 'Old' } });
    await system.pool.query(`UPDATE gateway.idempotency_keys SET created_at = now() - interval '25 hours' WHERE user_id = $1`, [u]);
    const again = await call('POST', '/api/tasks', { as: u, key, body: { title: 'Old' } });
    expect(again).toMatchObject({ status: 201, replayed: null });
    expect(await titles(u)).toEqual(['Old', 'Old']);
  });

  it('two identical requests at once: one runs, the other waits (409 with Retry-After) or gets its answer', async () => {
    const u = randomUUID();
    const key = randomUUID();
    const both = await Promise.all([1, 2].map(() => call('POST', '/api/tasks', { as: u, key, body: { title: 'Once' } })));
    for (const r of both) {
      if (r.status === 409) expect(r.retryAfter).toBe('1');
      else expect(r.status).toBe(201);
    }
    expect(both.some((r) => r.status === 201 && r.replayed === null)).toBe(true);
    expect(await titles(u)).toEqual(['Once']);
  });
});
