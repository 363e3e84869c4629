import { request } from 'node:http';
import { freePort } from '@tasksvc/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayService } from '../../gateway/src/service.ts';
import { testSystemConfig } from '../../../tools/testenv/index.ts';
import { startSystem, type RunningSystem } from '../../../tools/system.ts';
import { createAuthService } from '../src/service.ts';
import { Browser } from './helpers.ts';

let system: RunningSystem | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

async function start(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const url = `http://localhost:${port}`;
  const config = await testSystemConfig({ PORT: String(port), PUBLIC_APP_URL: url, AUTH_CALLBACK_URL: url, ...env });
  system = await startSystem(config, { services: [createAuthService(), gatewayService] });
  return url;
}

/** POST /api/auth/signin/<id> with a CSRF token, as the login page's form does; returns the redirect target. */
async function authorizationRequest(url: string, provider: string): Promise<URL> {
  const browser = new Browser();
  const { body } = await browser.json<{ csrfToken: string }>(`${url}/api/auth/csrf`);
  const res = await browser.fetch(`${url}/api/auth/signin/${provider}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrfToken: body.csrfToken, callbackUrl: `${url}/` }).toString(),
  });
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!);
}

describe('identity provider configuration', () => {
  it('reports no providers when none is configured', async () => {
    const url = await start({});
    const res = await new Browser().json<Record<string, unknown>>(`${url}/api/auth/providers`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
  });

  it('offers exactly the kinds whose variables are set, OIDC only with OIDC_ISSUER', async () => {
    const url = await start({ CODEHOST_CLIENT_ID: 'ch-id', CODEHOST_CLIENT_SECRET: 'ch-secret', CHAT_CLIENT_ID: 'chat-id', CHAT_CLIENT_SECRET: 'chat-secret' });
    const res = await new Browser().json<Record<string, { callbackUrl: string }>>(`${url}/api/auth/providers`);
    expect(Object.keys(res.body)).toEqual(['codehost', 'chat']);
    expect(res.body.codehost!.callbackUrl).toBe(`${url}/api/auth/callback/codehost`);
  });

  it('OIDC_ISSUER alone activates the OIDC button (spec), its callback under /api/auth/callback/oidc', async () => {
    const url = await start({ OIDC_ISSUER: 'https://id.example.com' });
    const res = await new Browser().json<Record<string, { callbackUrl: string }>>(`${url}/api/auth/providers`);
    expect(Object.keys(res.body)).toEqual(['oidc']);
    expect(res.body.oidc!.callbackUrl).toBe(`${url}/api/auth/callback/oidc`);
  });

  it('CODEHOST_*: code-hosting OAuth authorization request', async () => {
    const url = await start({ CODEHOST_CLIENT_ID: 'ch-id', CODEHOST_CLIENT_SECRET: 'ch-secret' });
    const loc = await authorizationRequest(url, 'codehost');
    expect(`${loc.origin}${loc.pathname}`).toBe('https://github.com/login/oauth/authorize');
    expect(loc.searchParams.get('client_id')).toBe('ch-id');
    expect(loc.searchParams.get('scope')).toBe('read:user user:email');
    expect(loc.searchParams.get('redirect_uri')).toBe(`${url}/api/auth/callback/codehost`);
    expect(loc.searchParams.get('response_type')).toBe('code');
    expect(loc.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it('CHAT_*: chat-platform authorization request', async () => {
    const url = await start({ CHAT_CLIENT_ID: 'chat-id', CHAT_CLIENT_SECRET: 'chat-secret' });
    const loc = await authorizationRequest(url, 'chat');
    expect(`${loc.origin}${loc.pathname}`).toBe('https://discord.com/api/oauth2/authorize');
    expect(loc.searchParams.get('client_id')).toBe('chat-id');
    expect(loc.searchParams.get('scope')).toBe('identify email');
    expect(loc.searchParams.get('redirect_uri')).toBe(`${url}/api/auth/callback/chat`);
    // A JSON body crosses the proxy as sent, too.
    const browser = new Browser();
    const { body } = await browser.json<{ csrfToken: string }>(`${url}/api/auth/csrf`);
    const res = await browser.fetch(`${url}/api/auth/signin/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ csrfToken: body.csrfToken, callbackUrl: `${url}/` }) });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).origin).toBe('https://discord.com');
    // A wrong CSRF token does not start a sign-in.
    const forged = await browser.fetch(`${url}/api/auth/signin/chat`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrfToken=forged' });
    expect(forged.headers.get('location') ?? '').not.toContain('discord.com');
  });

  it('SEARCH_*: search-engine OAuth 2.0 / OIDC authorization request', async () => {
    const url = await start({ SEARCH_CLIENT_ID: 'search-id', SEARCH_CLIENT_SECRET: 'search-secret' });
    const loc = await authorizationRequest(url, 'search');
    expect(`${loc.origin}${loc.pathname}`).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    expect(loc.searchParams.get('client_id')).toBe('search-id');
    expect(loc.searchParams.get('scope')).toBe('openid email profile');
    expect(loc.searchParams.get('redirect_uri')).toBe(`${url}/api/auth/callback/search`);
    expect(loc.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it('CONSUMER_ACCOUNT_*: authorization request pinned to the consumers tenant', async () => {
    const url = await start({ CONSUMER_ACCOUNT_CLIENT_ID: 'ca-id', CONSUMER_ACCOUNT_CLIENT_SECRET: 'ca-secret' });
    const loc = await authorizationRequest(url, 'consumer-account');
    expect(`${loc.origin}${loc.pathname}`).toBe('https://login.microsoftonline.com/consumers/oauth2/v2.0/authorize');
    expect(loc.pathname.split('/')[1]).toBe('consumers');
    expect(loc.searchParams.get('client_id')).toBe('ca-id');
    expect(loc.searchParams.get('scope')).toBe('openid profile email User.Read');
    expect(loc.searchParams.get('redirect_uri')).toBe(`${url}/api/auth/callback/consumer-account`);
  });

  it('uses AUTH_CALLBACK_URL for the redirect URI, whatever Host the request came with', async () => {
    const port = await freePort();
    const config = await testSystemConfig({ PORT: String(port), PUBLIC_APP_URL: 'https://tasks.example.test', AUTH_CALLBACK_URL: 'https://tasks.example.test', CODEHOST_CLIENT_ID: 'ch-id', CODEHOST_CLIENT_SECRET: 'ch-secret' });
    system = await startSystem(config, { services: [createAuthService(), gatewayService] });
    const browser = new Browser();
    const base = `http://127.0.0.1:${port}`;
    const csrf = await browser.fetch(`${base}/api/auth/csrf`, { headers: { 'x-forwarded-host': 'evil.example' } });
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    // https origin → __Secure- / __Host- cookies with the Secure flag
    expect(csrf.headers.getSetCookie()[0]).toMatch(/^__Host-authjs\.csrf-token=.*Secure/);
    const res = await browser.fetch(`${base}/api/auth/signin/codehost`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-host': 'evil.example' },
      body: new URLSearchParams({ csrfToken, callbackUrl: 'https://tasks.example.test/' }).toString(),
    });
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location')!).searchParams.get('redirect_uri')).toBe('https://tasks.example.test/api/auth/callback/codehost');
  });

  it('AUTH_TRUST_HOST=false: Auth.js routes answer only on the configured host', async () => {
    const url = await start({ AUTH_TRUST_HOST: 'false', CODEHOST_CLIENT_ID: 'ch-id', CODEHOST_CLIENT_SECRET: 'ch-secret' });
    const ok = await fetch(`${url}/api/auth/providers`);
    expect(ok.status).toBe(200);
    const port = Number(new URL(url).port);
    const other = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/api/auth/providers', headers: { host: 'evil.example' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(other.status).toBe(400);
    expect((JSON.parse(other.body) as { code: string }).code).toBe('UNTRUSTED_HOST');
  });
});
