import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { defineRoute, resolveIdentityRpc } from '@tasksvc/proto';
import { createMemoryBus, createPool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { quietLogger, testConfig, until } from '../../../tools/testenv/index.ts';
import { buildGateway } from '../src/app.ts';
import { crossOriginVerdict } from '../src/same-origin.ts';

const log = quietLogger();
const CHROMIUM = '/usr/bin/chromium';

/** A body-less state change, like "regenerate backup codes" or "rotate the calendar feed". */
const rotate = defineRoute({ method: 'POST', path: '/api/test/rotate', auth: 'user', subject: 'testsvc.rotate', response: z.object({ by: z.string() }), summary: 't', tag: 't' });

describe('cross-origin rule (pure)', () => {
  const own = (o: string) => o === 'https://tasks.example.com';
  const cookie = 'authjs.session-token=abc';
  it('refuses a foreign or null Origin and a cross-site Sec-Fetch-Site on a cookie-authenticated write', () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(crossOriginVerdict({ method, headers: { cookie, origin: 'http://localhost:4000' } }, own), method).toMatch(/origin/);
    }
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie: `x=1; __Secure-${cookie}`, origin: 'null' } }, own)).not.toBeNull();
    // the https session cookie since #56.13
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie: `x=1; __Host-${cookie}`, origin: 'http://localhost:4000' } }, own)).not.toBeNull();
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie, 'sec-fetch-site': 'same-site' } }, own)).not.toBeNull();
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie, 'sec-fetch-site': 'cross-site' } }, own)).not.toBeNull();
  });
  it('lets through same-origin writes, reads, Bearer keys, cookie-less requests and non-browser clients', () => {
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie, origin: 'https://tasks.example.com' } }, own)).toBeNull();
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie, 'sec-fetch-site': 'same-origin' } }, own)).toBeNull();
    expect(crossOriginVerdict({ method: 'GET', headers: { cookie, origin: 'http://localhost:4000' } }, own)).toBeNull();
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie, origin: 'http://localhost:4000', authorization: 'Bearer ts_live_x' } }, own)).toBeNull();
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie: 'theme=dark', origin: 'http://localhost:4000' } }, own)).toBeNull();
    expect(crossOriginVerdict({ method: 'POST', headers: { cookie } }, own)).toBeNull();
  });
});

describe.skipIf(!existsSync(CHROMIUM))('a page on another local port (Chromium)', () => {
  let app: FastifyInstance;
  let pool: ReturnType<typeof createPool>;
  let attacker: Server;
  let browser: Browser;
  let appUrl: string;
  let evilUrl: string;
  const changes: string[] = [];
  const victim = randomUUID();

  beforeAll(async () => {
    // Identity is a test double (the session cookie's value is the user id): the browser behaviour is what is under test.
    const config = testConfig({ AUTH_TRUST_HOST: 'false' });
    const bus = createMemoryBus(log);
    bus.serve(resolveIdentityRpc, async ({ cookie }) => {
      const id = /authjs\.session-token=([\w-]+)/.exec(cookie ?? '')?.[1];
      return id ? { id, email: 'v@example.com', method: 'session' as const, readOnly: false, secondFactorOk: true, isAdmin: false } : null;
    });
    bus.serve(rotate.rpc, async ({ user }) => {
      changes.push(user!.id);
      return { by: user!.id };
    });
    pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    app = await buildGateway({ config, bus, pool, log, routes: [rotate] });
    await app.listen({ port: 0, host: '127.0.0.1' });
    appUrl = `http://localhost:${(app.server.address() as { port: number }).port}`;
    // The attacker's page: a body-less fetch with the victim's cookies, and an auto-submitted form.
    attacker = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><body>
<form id="f" method="POST" action="${appUrl}/api/test/rotate" enctype="text/plain"></form>
<script>
fetch('${appUrl}/api/test/rotate', { method: 'POST', mode: 'no-cors', credentials: 'include' })
  .then(() => 'sent', (e) => 'error ' + e).then((r) => { window.fetchResult = r; document.getElementById('f').submit(); });
</script></body>`);
    });
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
    evilUrl = `http://localhost:${(attacker.address() as { port: number }).port}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => attacker?.close(r));
    await app?.close();
    await pool?.end();
  });

  it('cannot change anything with the victim’s session cookie, while the app’s own page can', async () => {
    const context = await browser.newContext();
    await context.addCookies([{ name: 'authjs.session-token', value: victim, domain: 'localhost', path: '/', httpOnly: true, sameSite: 'Lax' }]);
    const page = await context.newPage();
    const refused: number[] = [];
    page.on('response', (r) => {
      if (r.url().endsWith('/api/test/rotate')) refused.push(r.status());
    });
    await page.goto(evilUrl);
    // Both attempts reached the gateway (the form's navigation lands on its answer) and were refused.
    await until(() => refused.length >= 1 && page.url().startsWith(appUrl), 'the form submission answered');
    expect(await page.textContent('body')).toMatch(/cross-origin request refused/);
    expect(refused.every((s) => s === 403)).toBe(true);
    expect(changes).toEqual([]);

    // Positive control: the same request from the app's own origin is accepted.
    await page.goto(`${appUrl}/api/health`);
    const status = await page.evaluate(async () => (await fetch('/api/test/rotate', { method: 'POST' })).status);
    expect(status).toBe(201);
    expect(changes).toEqual([victim]);
    await context.close();
  });
});
