import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileNats } from '../../../tools/testenv/index.ts';
import { Browser, oidcSignIn, startAuthSystem, type AuthTestSystem } from './helpers.ts';

const nats = fileNats();

let t: AuthTestSystem;
beforeAll(async () => {
  t = await startAuthSystem({}, { natsUrl: nats.url() });
});
afterAll(async () => {
  await t?.stop();
});

describe('sign-in with the gateway and the auth service talking over a real nats-server', () => {
  it('carries the Auth.js exchange (several Set-Cookie headers, form bodies) across NATS', async () => {
    expect(t.system.bus.kind).toBe('nats');
    const browser = new Browser();
    const { callback, landing } = await oidcSignIn(browser, t.url, 'nats-user@example.test');
    expect(callback.status).toBe(302);
    expect(landing.pathname).toBe('/dashboard');
    const me = await browser.json<{ email: string; method: string }>(`${t.url}/api/auth/me`);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: 'nats-user@example.test', method: 'session' });
  });
});
