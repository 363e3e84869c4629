import { AsyncLocalStorage } from 'node:async_hooks';
import { Auth, type AuthConfig } from '@auth/core';
import type { Adapter, AdapterSession, AdapterUser } from '@auth/core/adapters';
import { HOST_SESSION_COOKIE, legacySessionToken, sameOriginPath, sessionCookieName, type AuthjsRequest, type AuthjsResponse } from '@tasksvc/proto';
import { buildProviders } from '../domain/providers.ts';
import { generateSessionToken, SESSION_MAX_AGE_SECONDS, SESSION_UPDATE_AGE_SECONDS, sessionTokenHash } from '../domain/tokens.ts';
import { deleteSessionByHash, insertSession, sessionAndUser, updateSessionExpiry } from '../db/sessions.ts';
import { insertAccount, insertUser, updateUser, userByAccount, userByEmail, userById, type UserRow } from '../db/users.ts';
import { secureCookies, type AuthDeps } from './context.ts';
import { signInOrigin, signInOrigins } from '../domain/origins.ts';

/** Client address and agent of the request Auth.js is handling, for the session row it may create. */
const requestMeta = new AsyncLocalStorage<{ ip?: string | undefined; userAgent?: string | undefined }>();

function toAdapterUser(u: UserRow): AdapterUser {
  return { id: u.id, email: u.email ?? '', emailVerified: u.emailVerified, name: u.name, image: u.image };
}

/**
 * Auth.js's database adapter over the auth schema. Session rows are keyed by an HMAC of the cookie
 * value under AUTH_SECRET (see domain/tokens.ts).
 */
export function createAdapter(deps: AuthDeps): Adapter {
  const { pool } = deps;
  const hash = (token: string) => sessionTokenHash(deps.config.AUTH_SECRET, token);
  return {
    async createUser(user) {
      return toAdapterUser(await insertUser(pool, { email: user.email || null, name: user.name ?? null, image: user.image ?? null, emailVerified: user.emailVerified ?? null }));
    },
    async getUser(id) {
      const u = await userById(pool, id);
      return u ? toAdapterUser(u) : null;
    },
    async getUserByEmail(email) {
      const u = await userByEmail(pool, email);
      return u ? toAdapterUser(u) : null;
    },
    async getUserByAccount({ provider, providerAccountId }) {
      const u = await userByAccount(pool, provider, providerAccountId);
      return u ? toAdapterUser(u) : null;
    },
    async updateUser(user) {
      return toAdapterUser(
        await updateUser(pool, user.id, {
          ...(user.email !== undefined ? { email: user.email || null } : {}),
          ...(user.name !== undefined ? { name: user.name } : {}),
          ...(user.image !== undefined ? { image: user.image } : {}),
          ...(user.emailVerified !== undefined ? { emailVerified: user.emailVerified } : {}),
        }),
      );
    },
    async linkAccount(account) {
      await insertAccount(pool, account);
      return account;
    },
    async createSession(session) {
      const meta = requestMeta.getStore();
      await insertSession(pool, { tokenHash: hash(session.sessionToken), userId: session.userId, expires: session.expires, ip: meta?.ip, userAgent: meta?.userAgent });
      return session;
    },
    async getSessionAndUser(sessionToken) {
      const found = await sessionAndUser(pool, hash(sessionToken));
      if (!found) return null;
      const session: AdapterSession = { sessionToken, userId: found.session.userId, expires: found.session.expires };
      return { session, user: toAdapterUser(found.user) };
    },
    async updateSession(session) {
      if (!session.expires) return null;
      const row = await updateSessionExpiry(pool, hash(session.sessionToken), session.expires);
      return row ? { sessionToken: session.sessionToken, userId: row.userId, expires: row.expires } : null;
    },
    async deleteSession(sessionToken) {
      await deleteSessionByHash(pool, hash(sessionToken));
    },
  };
}

/** Where the browser goes after signing in when the requested place is not on this site. */
export const DEFAULT_LANDING = '/dashboard';

/** Auth.js's configuration for sign-in on `origin` (AUTH_CALLBACK_URL's, or another loopback name of it: domain/origins.ts). */
export function authjsConfig(deps: AuthDeps, origin = new URL(deps.config.AUTH_CALLBACK_URL).origin): AuthConfig {
  const { config, log } = deps;
  return {
    secret: config.AUTH_SECRET,
    // The request URL is always built from AUTH_CALLBACK_URL (a client's Host header only picks one of
    // its loopback names in development) and the gateway rejects unrecognised hosts unless
    // AUTH_TRUST_HOST is true, so Auth.js may trust it.
    trustHost: true,
    basePath: '/api/auth',
    providers: buildProviders(config),
    adapter: createAdapter(deps),
    session: { strategy: 'database', maxAge: SESSION_MAX_AGE_SECONDS, updateAge: SESSION_UPDATE_AGE_SECONDS, generateSessionToken },
    useSecureCookies: secureCookies(config),
    // `__Host-` over https rather than Auth.js's `__Secure-` (#56.13); its other options (HttpOnly, Lax,
    // Path=/, Secure, no Domain) are Auth.js's defaults, which the prefix requires.
    cookies: { sessionToken: { name: sessionCookieName(secureCookies(config)) } },
    pages: { signIn: '/login', error: '/login' },
    // callbackUrl comes from the client: only a normalised path on this origin is followed (#19.7).
    callbacks: { redirect: ({ url }) => `${origin}${sameOriginPath(url, origin) ?? DEFAULT_LANDING}` },
    logger: {
      error: (err) => log.warn({ err: { name: err.name, message: err.message } }, 'auth.js error'),
      warn: (code) => log.debug({ code }, 'auth.js warning'),
      debug: () => undefined,
    },
  };
}

const DROP_REQUEST_HEADERS = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive', 'upgrade', 'expect']);

/** Run one forwarded `/api/auth/*` request through Auth.js. */
export function createAuthjsHandler(deps: AuthDeps): (req: AuthjsRequest) => Promise<AuthjsResponse> {
  const configs = new Map(signInOrigins(deps.config.AUTH_CALLBACK_URL).map((o) => [o, authjsConfig(deps, o)]));
  return async (req) => {
    const host = Object.entries(req.headers).find(([k]) => k.toLowerCase() === 'host')?.[1];
    const origin = signInOrigin(deps.config.AUTH_CALLBACK_URL, host);
    const authConfig = configs.get(origin)!;
    if (!req.path.startsWith('/api/auth/')) return { status: 404, headers: [['content-type', 'application/json']], body: JSON.stringify({ code: 'NOT_FOUND', message: 'not an Auth.js path' }) };
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (!DROP_REQUEST_HEADERS.has(k.toLowerCase())) headers.set(k, v);
    // A session under the cookie's name before #56.13 is Auth.js's too (its session, sign-out); the
    // gateway renames the cookie in the answer.
    const legacy = legacySessionToken(headers.get('cookie') ?? undefined, secureCookies(deps.config));
    if (legacy) headers.set('cookie', `${headers.get('cookie')}; ${HOST_SESSION_COOKIE}=${encodeURIComponent(legacy)}`);
    const method = req.method.toUpperCase();
    const request = new Request(new URL(req.path, origin), {
      method,
      headers,
      ...(method !== 'GET' && method !== 'HEAD' && req.body !== undefined ? { body: req.body } : {}),
    });
    const response = await requestMeta.run({ ip: req.ip, userAgent: req.headers['user-agent'] }, () => Auth(request, authConfig));
    const out: [string, string][] = [];
    response.headers.forEach((value, name) => {
      if (name.toLowerCase() !== 'set-cookie') out.push([name, value]);
    });
    for (const c of response.headers.getSetCookie()) out.push(['set-cookie', c]);
    return { status: response.status, headers: out, body: await response.text() };
  };
}
