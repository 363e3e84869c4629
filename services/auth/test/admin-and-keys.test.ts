import type { AdminStats } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schedulerService } from '../../scheduler/src/service.ts';
import { tasksService } from '../../tasks/src/service.ts';
import { Browser, signedIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

let t: AuthTestSystem;
let alice: Awaited<ReturnType<typeof signedIn>>;
let bob: Awaited<ReturnType<typeof signedIn>>;

beforeAll(async () => {
  t = await startAuthSystem({ ADMIN_USER_IDS: '' }, { extra: [tasksService, schedulerService] });
  alice = await signedIn(t, 'alice@example.test');
  bob = await signedIn(t, 'bob@example.test');
});
afterAll(async () => {
  await t?.stop();
});

describe('admin gating', () => {
  it('ADMIN_USER_IDS empty → nobody, not even a signed-in user', async () => {
    const api = await alice.browser.json<{ code: string }>(`${t.url}/api/admin/stats`);
    expect(api.status).toBe(403);
    expect(api.body.code).toBe('ADMIN_ONLY');
    expect((await alice.browser.fetch(`${t.url}/admin`)).status).toBe(403);
  });

  it('listed user 200, other user 403, anonymous 401 (API and page)', async () => {
    await t.restart({ ADMIN_USER_IDS: [alice.userId] });
    // A task of bob's: the admin sees counts, never its content.
    const task = await bob.browser.json<{ id: string }>(`${t.url}/api/tasks`, { method: 'POST', body: JSON.stringify({ title: 'bob private title' }) });
    expect(task.status).toBe(201);

    const stats = await alice.browser.json<AdminStats>(`${t.url}/api/admin/stats`);
    expect(stats.status).toBe(200);
    expect(stats.body.users).toMatchObject({ total: 2, new7d: 2, new30d: 2, byProvider: [{ provider: 'oidc', users: 2 }] });
    expect(stats.body.users.active7d).toBeGreaterThanOrEqual(1);
    expect(stats.body.tasks).toMatchObject({ tasksTotal: 1, tasksOpen: 1, usersWithTasks: 1 });
    // From the scheduler: last cron run and update-check state (DISABLE_UPDATE_CHECK=true in tests).
    expect(stats.body.cron).toMatchObject({ lastRunAt: null, jobs: [] });
    // Game figures: the top users by coins (named from auth, never by e-mail) and the achievement distribution.
    expect(stats.body.tasks!.topUsers).toEqual([expect.objectContaining({ userId: bob.userId, name: 'bob', coins: 0, level: 1, tasksCompleted: 0 })]);
    expect(stats.body.tasks!.achievements).toHaveLength(31);
    expect(stats.body.tasks!.achievements![0]).toEqual({ key: 'tasks_1', title: 'First Step', users: 0 });
    expect(stats.body.update).toMatchObject({ status: 'disabled' });
    expect(JSON.stringify(stats.body)).not.toContain('bob private title');
    expect(JSON.stringify(stats.body)).not.toContain('bob@example.test');

    const page = await alice.browser.fetch(`${t.url}/admin`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');

    const other = await bob.browser.json<{ code: string }>(`${t.url}/api/admin/stats`);
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('ADMIN_ONLY');
    expect((await bob.browser.fetch(`${t.url}/admin`)).status).toBe(403);

    const anon = await new Browser().json<{ code: string }>(`${t.url}/api/admin/stats`);
    expect(anon.status).toBe(401);
    expect(anon.body.code).toBe('UNAUTHENTICATED');
    const anonPage = await new Browser().fetch(`${t.url}/admin`);
    expect(anonPage.status).toBe(401);
    expect(await anonPage.text()).toContain('/login?callbackUrl=%2Fadmin');
  });
});

describe('API keys', () => {
  it('create (shown once), use as Bearer, list without the key, read-only keys only GET, revoke', async () => {
    const created = await bob.browser.json<{ id: string; key: string; prefix: string; readOnly: boolean }>(`${t.url}/api/user/api-keys`, { method: 'POST', body: JSON.stringify({ name: 'cli' }) });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^ts_live_[\w-]{43}$/);
    expect(created.body.key.startsWith(created.body.prefix)).toBe(true);
    const { rows } = await t.system.pool.query('SELECT key_hash FROM auth.api_keys WHERE id = $1', [created.body.id]);
    expect(rows[0].key_hash).not.toContain(created.body.key);

    const bearer = { authorization: `Bearer ${created.body.key}` };
    const me = await fetch(`${t.url}/api/auth/me`, { headers: bearer });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email: 'bob@example.test', method: 'api_key' });
    const write = await fetch(`${t.url}/api/tasks`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ title: 'via key' }) });
    expect(write.status).toBe(201);

    const ro = await bob.browser.json<{ key: string; readOnly: boolean }>(`${t.url}/api/user/api-keys`, { method: 'POST', body: JSON.stringify({ name: 'dashboard', readOnly: true }) });
    expect(ro.body.readOnly).toBe(true);
    const roHeaders = { authorization: `Bearer ${ro.body.key}`, 'content-type': 'application/json' };
    expect((await fetch(`${t.url}/api/tasks`, { headers: roHeaders })).status).toBe(200);
    const denied = await fetch(`${t.url}/api/tasks`, { method: 'POST', headers: roHeaders, body: JSON.stringify({ title: 'nope' }) });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { code: string }).code).toBe('READ_ONLY_KEY');

    const list = await bob.browser.json<{ keys: Record<string, unknown>[] }>(`${t.url}/api/user/api-keys`);
    expect(list.body.keys).toHaveLength(2);
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    expect(list.body.keys.every((k) => !('key' in k))).toBe(true);

    // Another user's key id is 404, never theirs to revoke.
    expect((await alice.browser.fetch(`${t.url}/api/user/api-keys/${created.body.id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await bob.browser.fetch(`${t.url}/api/user/api-keys/${created.body.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await fetch(`${t.url}/api/auth/me`, { headers: bearer })).status).toBe(401);
    // …at once on every route, also those whose gateway cached the key's identity a moment ago
    expect((await fetch(`${t.url}/api/tasks`, { headers: bearer })).status).toBe(401);
    // A non-Bearer Authorization header (a proxy's Basic auth) does not hide the session cookie.
    const basic = await bob.browser.json<{ method: string }>(`${t.url}/api/auth/me`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(basic.status).toBe(200);
    expect(basic.body.method).toBe('session');
    // An API key cannot mint keys.
    const mint = await fetch(`${t.url}/api/user/api-keys`, { method: 'POST', headers: { authorization: `Bearer ${ro.body.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x' }) });
    expect(mint.status).toBe(403);
  });

  it('expired keys stop working; bad input names the field', async () => {
    const past = await bob.browser.json<{ issues: { path: string }[] }>(`${t.url}/api/user/api-keys`, { method: 'POST', body: JSON.stringify({ name: 'old', expiresAt: '2001-01-01T00:00:00Z' }) });
    expect(past.status).toBe(400);
    expect(past.body.issues[0]!.path).toBe('body.expiresAt');
    const noName = await bob.browser.json<{ issues: { path: string }[] }>(`${t.url}/api/user/api-keys`, { method: 'POST', body: JSON.stringify({ name: '' }) });
    expect(noName.status).toBe(400);
    expect(noName.body.issues[0]!.path).toBe('body.name');
    const soon = await bob.browser.json<{ id: string; key: string }>(`${t.url}/api/user/api-keys`, { method: 'POST', body: JSON.stringify({ name: 'short', expiresAt: new Date(Date.now() + 3_600_000).toISOString() }) });
    expect(soon.status).toBe(201);
    expect((await fetch(`${t.url}/api/auth/me`, { headers: { authorization: `Bearer ${soon.body.key}` } })).status).toBe(200);
    await t.system.pool.query(`UPDATE auth.api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [soon.body.id]);
    expect((await fetch(`${t.url}/api/auth/me`, { headers: { authorization: `Bearer ${soon.body.key}` } })).status).toBe(401);
  });

  it('an expiring key stops working at its expiry, also where the gateway cached its identity a moment before (#56.3)', async () => {
    const expiresAt = Date.now() + 4_000;
    const key = await bob.browser.json<{ key: string }>(`${t.url}/api/user/api-keys`, { method: 'POST', body: JSON.stringify({ name: 'expiring', expiresAt: new Date(expiresAt).toISOString() }) });
    expect(key.status).toBe(201);
    const bearer = { authorization: `Bearer ${key.body.key}` };
    // cached by the gateway (a task route answers API keys from the cache)
    expect((await fetch(`${t.url}/api/tasks`, { headers: bearer })).status).toBe(200);
    expect(Date.now(), 'the first call was made before the expiry').toBeLessThan(expiresAt);
    // no event tells anyone that time passed: the cache must know the key's expiry itself
    await new Promise((r) => setTimeout(r, expiresAt - Date.now() + 50));
    expect((await fetch(`${t.url}/api/tasks`, { headers: bearer })).status).toBe(401);
  });
});

describe('sessions', () => {
  it('lists sessions with the current one marked, revokes one, signs out everywhere', async () => {
    const a1 = await signedIn(t, 'sessions@example.test');
    const a2 = await signedIn(t, 'sessions@example.test');
    const list = await a1.browser.json<{ sessions: { id: string; current: boolean; secondFactorVerifiedAt: string | null; userAgent: string | null }[] }>(`${t.url}/api/auth/sessions`);
    expect(list.status).toBe(200);
    expect(list.body.sessions).toHaveLength(2);
    expect(list.body.sessions.filter((s) => s.current)).toHaveLength(1);
    expect(list.body.sessions[0]).toHaveProperty('secondFactorVerifiedAt');
    const other = list.body.sessions.find((s) => !s.current)!;
    // Scoped to the owner: bob cannot revoke it.
    expect((await bob.browser.fetch(`${t.url}/api/auth/sessions/${other.id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await a1.browser.fetch(`${t.url}/api/auth/sessions/${other.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await a2.browser.json(`${t.url}/api/auth/me`)).status).toBe(401);
    expect((await a1.browser.json(`${t.url}/api/auth/me`)).status).toBe(200);

    const a3 = await signedIn(t, 'sessions@example.test');
    const all = await a1.browser.json<{ revoked: number }>(`${t.url}/api/auth/sessions`, { method: 'DELETE' });
    expect(all.status).toBe(200);
    expect(all.body.revoked).toBe(2);
    expect((await a1.browser.json(`${t.url}/api/auth/me`)).status).toBe(401);
    expect((await a3.browser.json(`${t.url}/api/auth/me`)).status).toBe(401);
    expect((await bob.browser.json(`${t.url}/api/auth/me`)).status).toBe(200);
  });
});
