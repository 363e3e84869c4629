import { freePort } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSessionToken, sessionTokenHash } from '../src/domain/tokens.ts';
import { Browser, startAuthSystem, type AuthTestSystem } from './helpers.ts';

/** Public URL https (a TLS proxy in front, AUTH_TRUST_HOST=true); the test talks to the gateway as that proxy would. */
let t: AuthTestSystem;
let publicUrl: string;
beforeAll(async () => {
  publicUrl = `https://localhost:${await freePort()}`;
  t = await startAuthSystem({ PUBLIC_APP_URL: publicUrl, AUTH_CALLBACK_URL: publicUrl, AUTH_TRUST_HOST: 'true' });
});
afterAll(async () => {
  await t?.stop();
});

describe('behind a TLS proxy', () => {
  it('accepts the __Secure- cookie and refuses the same token under the plain name', async () => {
    const token = generateSessionToken();
    const { rows } = await t.system.pool.query<{ id: string }>(`INSERT INTO auth.users (email) VALUES ('secure@example.test') RETURNING id`);
    await t.system.pool.query(`INSERT INTO auth.sessions (token_hash, user_id, expires) VALUES ($1, $2, now() + interval '1 day')`, [sessionTokenHash(t.config.AUTH_SECRET, token), rows[0]!.id]);
    const me = (cookie: string) => new Browser().json<{ id: string }>(`${t.url}/api/auth/me`, { headers: { cookie } });

    const secure = await me(`__Secure-authjs.session-token=${token}`);
    expect(secure.status).toBe(200);
    expect(secure.body.id).toBe(rows[0]!.id);
    expect((await me(`authjs.session-token=${token}`)).status).toBe(401);
  });

  it('takes the client address from the trusted proxy hops, not from what the client wrote into X-Forwarded-For', async () => {
    // The client claims 203.0.113.9; the one proxy in front (the default with AUTH_TRUST_HOST) saw 198.51.100.7.
    const clientKeyOf = async (xff: string) => {
      const res = await new Browser().json<{ challengeId: string }>(`${t.url}/api/auth/passkey/login/options`, { method: 'POST', headers: { 'x-forwarded-for': xff } });
      expect(res.status).toBe(200);
      const { rows } = await t.system.pool.query<{ client_key: string }>('SELECT client_key FROM auth.webauthn_challenges WHERE id = $1', [res.body.challengeId]);
      return rows[0]!.client_key;
    };
    expect(await clientKeyOf('203.0.113.9, 198.51.100.7')).toBe('198.51.100.7');
    await t.restart({ TRUST_PROXY_HOPS: 2 });
    expect(await clientKeyOf('203.0.113.9, 198.51.100.7, 192.0.2.1')).toBe('198.51.100.7');
    await t.restart({ TRUST_PROXY_HOPS: 0 });
    // No proxy believed: the connection's own (loopback) address.
    expect(['127.0.0.1', '0:0:0:0::/64']).toContain(await clientKeyOf('203.0.113.9'));
  });
});
