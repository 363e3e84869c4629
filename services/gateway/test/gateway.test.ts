import { randomUUID } from 'node:crypto';
import { AppError, defineRoute, IDENTITY_CHANGED_SUBJECT, resolveIdentityRpc } from '@tasksvc/proto';
import { createMemoryBus, createPool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { quietLogger, testConfig, until } from '../../../tools/testenv/index.ts';
import { buildGateway } from '../src/app.ts';
import { identityCache } from '../src/identity-cache.ts';

const log = quietLogger();
const alice = randomUUID();
const bob = randomUUID();

const echo = defineRoute({
  method: 'POST',
  path: '/api/test/things/:id',
  auth: 'user',
  subject: 'testsvc.things.create',
  params: z.object({ id: z.uuid() }),
  query: z.object({ n: z.coerce.number().int().max(10).optional() }).strict(),
  body: z.object({ title: z.string().min(1).max(20) }).strict(),
  response: z.object({ id: z.string(), title: z.string(), by: z.string(), n: z.number().nullable() }),
  summary: 'test',
  tag: 'test',
});
const list = defineRoute({ method: 'GET', path: '/api/test/things', auth: 'user', subject: 'testsvc.things.list', response: z.array(z.string()), summary: 't', tag: 't' });
const boom = defineRoute({ method: 'GET', path: '/api/test/boom', auth: 'none', subject: 'testsvc.boom', response: z.object({}), summary: 't', tag: 't' });
const admin = defineRoute({ method: 'GET', path: '/api/test/admin', auth: 'admin', subject: 'testsvc.admin', response: z.object({ ok: z.boolean() }), summary: 't', tag: 't' });

describe('gateway', () => {
  let app: FastifyInstance;
  let pool: ReturnType<typeof createPool>;
  beforeAll(async () => {
    const config = testConfig({ AUTH_TRUST_HOST: 'false', PUBLIC_APP_URL: 'https://tasks.example.com', ADMIN_USER_IDS: alice });
    const bus = createMemoryBus(log);
    // Identity is a test double here: the auth service has its own tests.
    bus.serve(resolveIdentityRpc, async ({ authorization }) => {
      const m = /^Bearer (rw|ro)-(.+)$/.exec(authorization ?? '');
      if (!m) return null;
      return { id: m[2]!, email: 'u@example.com', method: 'test', readOnly: m[1] === 'ro', secondFactorOk: true, isAdmin: false };
    });
    bus.serve(echo.rpc, async ({ user, params, body, query }) => ({ id: params.id, title: body.title, by: user!.id, n: query.n ?? null }));
    bus.serve(list.rpc, async () => ['a']);
    bus.serve(boom.rpc, async () => {
      throw new Error('db password is hunter2');
    });
    bus.serve(admin.rpc, async () => ({ ok: true }));
    pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    app = await buildGateway({ config, bus, pool, log, routes: [echo, list, boom, admin] });
  });
  afterAll(async () => {
    await app.close();
    await pool.end();
  });

  const req = (opts: { method?: string; url: string; token?: string; host?: string; body?: unknown }) =>
    app.inject({
      method: (opts.method ?? 'GET') as 'GET',
      url: opts.url,
      headers: { host: opts.host ?? 'tasks.example.com', ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}) },
      ...(opts.body !== undefined ? { payload: opts.body as object } : {}),
    });

  it('sets Strict-Transport-Security on every response', async () => {
    const res = await req({ url: '/api/test/things', token: `rw-${alice}` });
    expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    expect((await req({ url: '/api/nothing-here' })).headers['strict-transport-security']).toBeDefined();
  });

  it('rejects requests for unrecognised hosts while AUTH_TRUST_HOST is false', async () => {
    const res = await req({ url: '/api/test/things', token: `rw-${alice}`, host: 'evil.example.net' });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('UNTRUSTED_HOST');
    expect((await req({ url: '/api/test/things', token: `rw-${alice}`, host: '127.0.0.1:3000' })).statusCode).toBe(400);
    // probes call health by IP: exempt
    expect((await req({ url: '/api/health', host: '10.1.2.3:3000' })).json()).toHaveProperty('version');
  });

  it('forwards a valid call with the caller identity', async () => {
    const id = randomUUID();
    const res = await req({ method: 'POST', url: `/api/test/things/${id}?n=3`, token: `rw-${alice}`, body: { title: 'hello' } });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ id, title: 'hello', by: alice, n: 3 });
  });

  it('answers 400 naming each bad field, for params, query and body', async () => {
    const bad = await req({ method: 'POST', url: '/api/test/things/not-a-uuid?n=99', token: `rw-${alice}`, body: { title: '', extra: 1 } });
    expect(bad.statusCode).toBe(400);
    const body = bad.json();
    expect(body.code).toBe('VALIDATION_FAILED');
    expect(body.issues.map((i: { path: string }) => i.path)).toContain('params.id');
    const q = await req({ method: 'POST', url: `/api/test/things/${randomUUID()}?n=99`, token: `rw-${alice}`, body: { title: 'x' } });
    expect(q.json().issues[0].path).toBe('query.n');
    const b = await req({ method: 'POST', url: `/api/test/things/${randomUUID()}`, token: `rw-${alice}`, body: { title: 'x', extra: 1 } });
    expect(b.statusCode).toBe(400);
    expect(b.json().issues[0].path).toBe('body');
    const notJson = await app.inject({ method: 'POST', url: `/api/test/things/${randomUUID()}`, headers: { host: 'tasks.example.com', authorization: `Bearer rw-${alice}`, 'content-type': 'application/json' }, payload: '{nope' });
    expect(notJson.statusCode).toBe(400);
  });

  it('answers 401 without identity, 403 for a read-only key on a write, 403 for non-admins', async () => {
    expect((await req({ url: '/api/test/things' })).statusCode).toBe(401);
    const ro = await req({ method: 'POST', url: `/api/test/things/${randomUUID()}`, token: `ro-${alice}`, body: { title: 'x' } });
    expect(ro.statusCode).toBe(403);
    expect(ro.json().code).toBe('READ_ONLY_KEY');
    expect((await req({ url: '/api/test/things', token: `ro-${alice}` })).statusCode).toBe(200);
    expect((await req({ url: '/api/test/admin', token: `rw-${randomUUID()}` })).statusCode).toBe(403);
    expect((await req({ url: '/api/test/admin', token: `rw-${alice}` })).statusCode).toBe(200);
  });

  it('never leaks internals in a 5xx body', async () => {
    const res = await req({ url: '/api/test/boom' });
    expect(res.statusCode, res.body).toBe(500);
    expect(res.body).not.toContain('hunter2');
    expect(res.json()).toEqual({ code: 'INTERNAL', message: 'internal error' });
  });

  it('answers unknown API paths with a JSON 404', async () => {
    const res = await req({ url: '/api/does-not-exist' });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('NOT_FOUND');
  });

  it('maps every error code to exactly one 4xx/5xx status', () => {
    expect(new AppError('TASKS_NOT_FOUND', 'x').status).toBe(404);
    expect(new AppError('TOTP_REQUIRED_BY_ADMIN', 'x').status).toBe(403);
    expect(new AppError('LIMIT_REACHED', 'x').status).toBe(429);
  });
});

describe('trusted hosts in local development', () => {
  it('treats every loopback name and port as the configured loopback host, and still refuses others', async () => {
    const config = testConfig({ AUTH_TRUST_HOST: 'false' }); // PUBLIC_APP_URL defaults to http://localhost:3000
    const bus = createMemoryBus(log);
    bus.serve(resolveIdentityRpc, async () => null);
    const pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    const app = await buildGateway({ config, bus, pool, log, routes: [list] });
    for (const host of ['localhost:3000', '127.0.0.1:3000', '127.0.0.1:3311', '[::1]:3000', 'localhost']) {
      expect((await app.inject({ method: 'GET', url: '/api/test/things', headers: { host } })).statusCode, host).toBe(401);
    }
    for (const host of ['evil.example.net', 'localhost.evil.net', '10.0.0.1:3000']) {
      expect((await app.inject({ method: 'GET', url: '/api/test/things', headers: { host } })).json().code, host).toBe('UNTRUSTED_HOST');
    }
    await app.close();
    await pool.end();
  });
});

describe('gateway input safety nets', () => {
  it('refuses NUL characters, lone surrogates and absurd nesting with 400 naming the field, and maps database value errors to 4xx', async () => {
    const config = testConfig({ ADMIN_USER_IDS: '' });
    const bus = createMemoryBus(log);
    const pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    bus.serve(resolveIdentityRpc, async () => ({ id: alice, email: 'a@example.com', method: 'test' as const, readOnly: false, secondFactorOk: true, isAdmin: false }));
    let reached = false;
    bus.serve(echo.rpc, async () => {
      reached = true;
      // what pg throws for e.g. an out-of-range integer
      throw Object.assign(new Error('value "99999999999" is out of range for type integer'), { code: '22003' });
    });
    const app = await buildGateway({ config, bus, pool, log, routes: [echo] });
    const headers = { host: 'localhost:3000', authorization: 'Bearer x' };
    const nul = await app.inject({ method: 'POST', url: `/api/test/things/${randomUUID()}`, headers, payload: { title: 'a\u0000b' } });
    expect(nul.statusCode).toBe(400);
    expect(nul.json().issues[0].path).toBe('body.title');
    expect(reached).toBe(false);
    // a lone surrogate, as a JSON escape (the way a broken client sends one)
    const lone = await app.inject({ method: 'POST', url: `/api/test/things/${randomUUID()}`, headers: { ...headers, 'content-type': 'application/json' }, payload: '{"title":"a\\ud800b"}' });
    expect(lone.statusCode).toBe(400);
    expect(lone.json().issues[0]).toMatchObject({ path: 'body.title', message: expect.stringMatching(/lone surrogate/) });
    expect(reached).toBe(false);
    const deep = `{"title":"x","deep":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}}`;
    const nested = await app.inject({ method: 'POST', url: `/api/test/things/${randomUUID()}`, headers: { ...headers, 'content-type': 'application/json' }, payload: deep });
    expect(nested.statusCode).toBe(400);
    expect(nested.json().issues[0].message).toMatch(/nested deeper/);
    const range = await app.inject({ method: 'POST', url: `/api/test/things/${randomUUID()}`, headers, payload: { title: 'ok' } });
    expect(range.statusCode).toBe(400);
    expect(range.json().code).toBe('VALIDATION_FAILED');
    await app.close();
    await pool.end();
  });
});

describe('API-key identities', () => {
  it('asks the auth service once for a burst of requests with one key, and again at once after the user changes their account', async () => {
    const config = testConfig({ ADMIN_USER_IDS: '' });
    const bus = createMemoryBus(log);
    const pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    const asked: string[] = [];
    bus.serve(resolveIdentityRpc, async ({ authorization }) => {
      asked.push(authorization ?? '');
      const id = authorization === 'Bearer key-a' ? alice : authorization === 'Bearer key-b' ? bob : null;
      return id && { id, email: 'a@example.com', method: 'api_key' as const, readOnly: false, secondFactorOk: true, isAdmin: false };
    });
    bus.serve(list.rpc, async () => ['a']);
    const app = await buildGateway({ config, bus, pool, log, routes: [list] });
    const get = async (key: string) => (await app.inject({ method: 'GET', url: '/api/test/things', headers: { host: 'localhost:3000', authorization: `Bearer ${key}` } })).statusCode;
    for (let i = 0; i < 3; i++) expect(await get('key-a')).toBe(200);
    expect(await get('key-b')).toBe(200);
    expect(await get('nope')).toBe(401);
    expect(await get('nope')).toBe(401);
    expect(asked).toEqual(['Bearer key-a', 'Bearer key-b', 'Bearer nope', 'Bearer nope']);
    // what the auth service broadcasts after any account change (a revoked key, a new factor)
    bus.broadcast(IDENTITY_CHANGED_SUBJECT, { userId: alice });
    await until(async () => {
      await get('key-a');
      return asked.length > 4;
    }, 'the identity asked again');
    expect(asked.slice(4)).toEqual(['Bearer key-a']);
    expect(await get('key-b')).toBe(200);
    expect(asked).toHaveLength(5);
    await app.close();
    await pool.end();
  });

  it('asks again for a key in steady use before its answer expires, without making a request wait, and drops a key that no longer identifies anyone', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    const config = testConfig({ ADMIN_USER_IDS: '' });
    const bus = createMemoryBus(log);
    const pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    let asked = 0;
    let revoked = false;
    // an auth service that takes its time: a request that waited for it would show
    let answer = Promise.resolve();
    bus.serve(resolveIdentityRpc, async () => {
      asked++;
      await answer;
      return revoked ? null : { id: alice, email: 'a@example.com', method: 'api_key' as const, readOnly: false, secondFactorOk: true, isAdmin: false };
    });
    bus.serve(list.rpc, async () => ['a']);
    const app = await buildGateway({ config, bus, pool, log, routes: [list] });
    const get = async () => (await app.inject({ method: 'GET', url: '/api/test/things', headers: { host: 'localhost:3000', authorization: 'Bearer key-a' } })).statusCode;
    try {
      expect(await get()).toBe(200);
      expect(asked).toBe(1);
      // three quarters of a minute later (every entry is due by then, none expired): answered at
      // once while the auth service has not answered the refresh
      let release!: () => void;
      answer = new Promise((r) => (release = r));
      const stored = vi.spyOn(identityCache(bus), 'set');
      vi.setSystemTime(Date.now() + 45_000);
      expect(await get()).toBe(200);
      await until(() => asked === 2, 'the refresh asked');
      expect(await get()).toBe(200);
      expect(asked).toBe(2);
      release();
      await until(() => stored.mock.calls.length === 1, "the refresh's answer stored");
      // a new entry: a minute after the first answer the key is still cached
      vi.setSystemTime(Date.now() + 20_000);
      expect(await get()).toBe(200);
      expect(asked).toBe(2);
      // the key is revoked and the broadcast lost: the next refresh (due within the new entry's 45 s) drops it
      revoked = true;
      vi.setSystemTime(Date.now() + 30_000);
      expect(await get()).toBe(200);
      await until(async () => (await get()) === 401, 'the key refused once its refresh said no one');
      expect(asked).toBe(4);
    } finally {
      vi.useRealTimers();
      await app.close();
      await pool.end();
    }
  });
});
