import { randomUUID } from 'node:crypto';
import { resolveIdentityRpc } from '@tasksvc/proto';
import { createMemoryBus, createPool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testConfig } from '../../../tools/testenv/index.ts';
import { buildGateway } from '../src/app.ts';
import { normalisePagePath } from '../src/page-gates.ts';

const log = quietLogger();
const admin = randomUUID();
const member = randomUUID();

/** Gateway with an identity double: `Bearer <user id>`. */
let app: FastifyInstance;
let pool: ReturnType<typeof createPool>;
beforeAll(async () => {
  const bus = createMemoryBus(log);
  bus.serve(resolveIdentityRpc, async ({ authorization }) => {
    const id = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    return id ? { id, email: 'u@example.com', method: 'session' as const, readOnly: false, secondFactorOk: true, isAdmin: false } : null;
  });
  pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
  app = await buildGateway({ config: testConfig({ ADMIN_USER_IDS: admin }), bus, pool, log, routes: [] });
});
afterAll(async () => {
  await app.close();
  await pool.end();
});

const get = (url: string, user?: string) => app.inject({ method: 'GET', url, headers: { host: 'localhost:3000', ...(user ? { authorization: `Bearer ${user}` } : {}) } });

describe('admin page gate (#19.8)', () => {
  const spellings = ['/admin', '/ADMIN', '/Admin/users', '//admin', '///admin/', '/admin/', '/%61dmin', '/x/../admin', '/admin//keys'];

  it('normalises the path as a browser router would', () => {
    // (inject itself rewrites a leading backslash, so that spelling is checked here only)
    for (const p of [...spellings, '/\\admin', '/\\/ADMIN']) expect(normalisePagePath(p), p).toMatch(/^\/admin(\/|$)/);
    expect(normalisePagePath('/administrator')).toBe('/administrator');
    expect(normalisePagePath('/tasks/')).toBe('/tasks');
  });

  it('every spelling of /admin is gated: anonymous 401, a non-admin 403, an admin gets the page', async () => {
    for (const p of spellings) {
      expect((await get(p)).statusCode, `anonymous ${p}`).toBe(401);
      const denied = await get(p, member);
      expect(denied.statusCode, `member ${p}`).toBe(403);
      expect(denied.body).toMatch(/administrators/);
      expect((await get(p, admin)).statusCode, `admin ${p}`).toBe(200);
    }
  });
});

describe('Permissions-Policy (#56.13)', () => {
  it('every response turns off the powerful features the app does not use, keeps passkeys and the clipboard to its own origin', async () => {
    for (const path of ['/login', '/api/tasks', '/admin']) {
      const policy = (await get(path)).headers['permissions-policy'];
      expect(policy, path).toEqual(expect.any(String));
      const rules = new Map(String(policy).split(', ').map((r) => r.split('=') as [string, string]));
      for (const feature of ['camera', 'microphone', 'geolocation', 'payment', 'usb']) expect(rules.get(feature), `${path} ${feature}`).toBe('()');
      expect(rules.get('publickey-credentials-get')).toBe('(self)');
      expect(rules.get('publickey-credentials-create')).toBe('(self)');
      expect(rules.get('clipboard-write')).toBe('(self)');
    }
  });
});

describe('client-chosen request id (#56.12)', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const answer = async (gateway: FastifyInstance, id: string) =>
    String((await gateway.inject({ method: 'GET', url: '/api/health', headers: { host: 'localhost:3000', 'x-request-id': id } })).headers['x-request-id']);

  it('without a trusted proxy a client cannot choose the id echoed in answers and logs', async () => {
    const direct = await buildGateway({ config: testConfig({ AUTH_TRUST_HOST: 'false', PUBLIC_APP_URL: 'http://localhost:3000' }), bus: createMemoryBus(log), pool, log, routes: [] });
    try {
      expect(await answer(direct, 'chosen-by-client')).toMatch(UUID);
    } finally {
      await direct.close();
    }
  });

  it('from a trusted proxy only 1-64 characters of [A-Za-z0-9._-] are kept', async () => {
    expect(await answer(app, 'proxy.req_42-a')).toBe('proxy.req_42-a');
    expect(await answer(app, 'x'.repeat(64))).toBe('x'.repeat(64));
    for (const bad of ['x'.repeat(65), 'a b', 'a\u00e9', 'a"b', 'a/b']) expect(await answer(app, bad), bad).toMatch(UUID);
  });
});
