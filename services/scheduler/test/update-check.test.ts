import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { updateStatusRpc } from '@tasksvc/proto';
import { createMemoryBus, createPool, loadConfig, migrate, PROJECT_RELEASES_URL, releaseListingUrl, startService, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { quietLogger, testDatabase } from '../../../tools/testenv/index.ts';
import { createSchedulerService } from '../src/service.ts';
import { compareVersions, latestFromListing, readUpdateStatus, runUpdateCheck } from '../src/update-check.ts';

const log = quietLogger();
let pool: Pool;
let server: Server;
let base: string;
/** what the fake release listing answers next, and how often it was asked */
let reply: { status: number; body: unknown; location?: string } = { status: 200, body: { version: '1.0.0' } };
let hits = 0;
let lastPath = '';

beforeAll(async () => {
  pool = createPool(await testDatabase('upd'), log);
  await migrate(pool, { schema: 'scheduler', dir: new URL('../migrations', import.meta.url).pathname, log });
  // A real HTTP peer standing in for the public release-listing API (no internet on this machine).
  server = createServer((req, res) => {
    hits++;
    lastPath = req.url ?? '';
    if (reply.location) return void res.writeHead(reply.status, { location: reply.location }).end();
    res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await pool.end();
  await new Promise((r) => server.close(r));
});
beforeEach(async () => {
  hits = 0;
  await pool.query(`UPDATE scheduler.update_check SET ok = NULL, latest_version = NULL, error = NULL, checked_at = NULL, next_check_at = '-infinity', lease_until = NULL`);
});

const opts = (over: Partial<Parameters<typeof runUpdateCheck>[1]> = {}) => ({ url: `${base}/latest`, disabled: false, currentVersion: '1.2.0', log, ...over });
const status = (currentVersion = '1.2.0', disabled = false) => readUpdateStatus(pool, { currentVersion, disabled });

describe('release listing parsing', () => {
  it('reads npm and GitHub shapes', () => {
    expect(latestFromListing({ version: '2.3.4' })).toBe('2.3.4');
    expect(latestFromListing({ 'dist-tags': { latest: '2.0.0' } })).toBe('2.0.0');
    expect(latestFromListing({ tag_name: 'v1.9.0' })).toBe('1.9.0');
    expect(latestFromListing([{ tag_name: 'v3.0.0-rc.1', prerelease: true }, { tag_name: 'v2.1.0' }, { tag_name: 'v2.10.0' }, { tag_name: 'v9.0.0', draft: true }])).toBe('2.10.0');
    expect(() => latestFromListing({ name: 'x' })).toThrow();
    expect(() => latestFromListing([])).toThrow();
  });
  it('compares versions by semver precedence', () => {
    expect(compareVersions('1.10.0', '1.9.9')).toBeGreaterThan(0);
    expect(compareVersions('1.0.0-rc.1', '1.0.0')).toBeLessThan(0);
    expect(compareVersions('v1.2.3', '1.2.3')).toBe(0);
  });
});

describe('update check', () => {
  it('is "unknown" before the first check and "disabled" when turned off (without asking anyone)', async () => {
    expect((await status()).status).toBe('unknown');
    expect(await runUpdateCheck(pool, opts({ disabled: true }))).toBe('disabled');
    expect(hits).toBe(0);
    expect(await status('1.2.0', true)).toMatchObject({ status: 'disabled', checkedAt: null });
  });
  it('reports outdated or current with the time of the check, and asks at most once per 24 h', async () => {
    reply = { status: 200, body: [{ tag_name: 'v1.3.0' }] };
    expect(await runUpdateCheck(pool, opts())).toBe('checked');
    const s = await status();
    expect(s).toMatchObject({ status: 'outdated', currentVersion: '1.2.0', latestVersion: '1.3.0', error: null });
    expect(s.checkedAt).not.toBeNull();
    expect(await status('1.3.0')).toMatchObject({ status: 'current' });
    // A second replica (or call) right after does not ask again.
    expect(await runUpdateCheck(pool, opts())).toBe('not-due');
    expect(hits).toBe(1);
    const next = await pool.query<{ hours: number }>(`SELECT extract(epoch FROM next_check_at - checked_at) / 3600 AS hours FROM scheduler.update_check`);
    expect(Number(next.rows[0]!.hours)).toBe(24);
  });
  it('lets only one of several concurrent checks ask', async () => {
    reply = { status: 200, body: { version: '1.2.0' } };
    const results = await Promise.all([runUpdateCheck(pool, opts()), runUpdateCheck(pool, opts()), runUpdateCheck(pool, opts())]);
    expect(results.filter((r) => r === 'checked')).toHaveLength(1);
    expect(hits).toBe(1);
  });
  it('records a failure, shows it as "failed", and retries after an hour instead of a day', async () => {
    reply = { status: 503, body: { message: 'down' } };
    expect(await runUpdateCheck(pool, opts())).toBe('checked');
    expect(await status()).toMatchObject({ status: 'failed', error: 'HTTP 503' });
    const next = await pool.query<{ hours: number }>(`SELECT extract(epoch FROM next_check_at - checked_at) / 3600 AS hours FROM scheduler.update_check`);
    expect(Number(next.rows[0]!.hours)).toBe(1);
    // an unreachable listing fails the same way and never throws
    await pool.query(`UPDATE scheduler.update_check SET next_check_at = '-infinity'`);
    expect(await runUpdateCheck(pool, opts({ url: 'http://127.0.0.1:1/none' }))).toBe('checked');
    expect((await status()).status).toBe('failed');
  });
  it('follows a redirect only within the listing\'s own origin (issue 56 #10)', async () => {
    // another origin (here: another loopback port, standing in for any other host) is refused, unasked
    const elsewhere = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":"9.9.9"}'));
    await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
    let asked = 0;
    elsewhere.on('request', () => asked++);
    try {
      reply = { status: 302, body: null, location: `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/latest` };
      expect(await runUpdateCheck(pool, opts())).toBe('checked');
      expect(await status()).toMatchObject({ status: 'failed', error: expect.stringMatching(/redirect to another origin/) });
      expect(asked).toBe(0);
    } finally {
      await new Promise((r) => elsewhere.close(r));
      reply = { status: 200, body: { version: '1.0.0' } };
    }
  });

  it('says "unknown" when the last success is too old to trust', async () => {
    await pool.query(`UPDATE scheduler.update_check SET ok = true, latest_version = '1.2.0', checked_at = now() - interval '3 days'`);
    expect((await status()).status).toBe('unknown');
  });
});

describe('default source: this project\'s own release listing, never someone else\'s package', () => {
  /** The real default configuration: nothing set but what the spec requires. */
  const defaultEnv = { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', AUTH_SECRET: 'x'.repeat(32), AUTH_TRUST_HOST: 'true' };

  it('derives GitHub\'s releases API from the manifest\'s repository, or nothing', () => {
    expect(releaseListingUrl('github:task-org/task-service')).toBe('https://api.github.com/repos/task-org/task-service/releases');
    expect(releaseListingUrl('task-org/task-service')).toBe('https://api.github.com/repos/task-org/task-service/releases');
    expect(releaseListingUrl({ type: 'git', url: 'git+https://github.com/task-org/task-service.git' })).toBe('https://api.github.com/repos/task-org/task-service/releases');
    expect(releaseListingUrl(undefined)).toBeNull();
    expect(releaseListingUrl({ url: 'https://git.example.test/x/y' })).toBeNull();
  });

  it('with the real default configuration and a manifest naming no repository: off, asks nobody, and the admin panel says why', async () => {
    // This checkout's package.json names no repository (so there is no release listing of its own to ask).
    expect(PROJECT_RELEASES_URL).toBeNull();
    const config = loadConfig(defaultEnv);
    expect(config.UPDATE_CHECK_URL).toBeUndefined();
    const asked: string[] = [];
    const bus = createMemoryBus(log);
    const scheduler = await startService(createSchedulerService({ fetch: async (u) => (asked.push(u instanceof Request ? u.url : u.toString()), new Response('{}')) }), { config, bus, pool, log });
    try {
      const s = await bus.request(updateStatusRpc, {});
      expect(s).toMatchObject({ status: 'disabled', latestVersion: null });
      expect(s.reason).toMatch(/no release listing is configured.*UPDATE_CHECK_URL/);
      expect(asked).toEqual([]);
    } finally {
      await scheduler.stop();
      await bus.close();
    }
  });

  it('once the manifest names the repository, the default asks its releases API (a loopback stand-in with the same URL shape)', async () => {
    const config = loadConfig({ ...defaultEnv, UPDATE_CHECK_URL: releaseListingUrl('github:task-org/task-service')! });
    expect(config.UPDATE_CHECK_URL).toBe('https://api.github.com/repos/task-org/task-service/releases');
    reply = { status: 200, body: [{ tag_name: 'v1.4.0', draft: false, prerelease: false }, { tag_name: 'v2.0.0-rc.1', prerelease: true }] };
    // Same path and query, only the origin swapped for the stand-in (no internet here).
    const standIn: typeof fetch = (u, init) => fetch((u instanceof Request ? u.url : u.toString()).replace('https://api.github.com', base), init);
    expect(await runUpdateCheck(pool, { url: config.UPDATE_CHECK_URL!, disabled: false, currentVersion: '1.2.0', log, fetch: standIn })).toBe('checked');
    expect(lastPath).toBe('/repos/task-org/task-service/releases');
    expect(await status()).toMatchObject({ status: 'outdated', latestVersion: '1.4.0', reason: null });
  });
});
