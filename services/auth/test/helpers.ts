import { createServer, type Server } from 'node:http';
import Provider from 'oidc-provider';
import { freePort, type Config, type ServiceDefinition } from '@tasksvc/runtime';
import { gatewayService } from '../../gateway/src/service.ts';
import { testSystemConfig } from '../../../tools/testenv/index.ts';
import { startSystem, type RunningSystem } from '../../../tools/system.ts';
import { createAuthService, type AuthServiceOptions } from '../src/service.ts';
import { signInOrigins } from '../src/domain/origins.ts';

export const OIDC_CLIENT_ID = 'task-service-test';
export const OIDC_CLIENT_SECRET = 'task-service-test-secret-0123456789abcdef';

export interface LocalOp {
  issuer: string;
  stop(): Promise<void>;
}

/**
 * A real OpenID provider (oidc-provider) on 127.0.0.1. Logins are headless: the interaction page
 * signs in the account named by the authorization request's `login_hint` (`sub` or `sub|email`)
 * and grants consent.
 */
export async function startOp(appOrigin: string): Promise<LocalOp> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const accountOf = (hint: string) => {
    const [sub, email] = hint.split('|');
    return { sub: sub!, email: email ?? sub! };
  };
  const accounts = new Map<string, { sub: string; email: string }>();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: OIDC_CLIENT_ID,
        client_secret: OIDC_CLIENT_SECRET,
        redirect_uris: signInOrigins(appOrigin).map((o) => `${o}/api/auth/callback/oidc`),
        post_logout_redirect_uris: signInOrigins(appOrigin).map((o) => `${o}/`),
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    cookies: { keys: ['op-test-cookie-key-0123456789'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
    findAccount: (_ctx: unknown, id: string) => {
      const a = accounts.get(id) ?? { sub: id, email: id };
      return { accountId: id, claims: () => ({ sub: a.sub, email: a.email, email_verified: true, name: a.email.split('@')[0] }) };
    },
  });
  const callback = provider.callback();
  const server: Server = createServer((req, res) => {
    if (!req.url?.startsWith('/interaction/')) return callback(req, res);
    void (async () => {
      try {
        const details = await provider.interactionDetails(req, res);
        if (details.prompt.name === 'login') {
          const a = accountOf(details.params.login_hint ?? 'user@example.test');
          accounts.set(a.sub, a);
          await provider.interactionFinished(req, res, { login: { accountId: a.sub } }, { mergeWithLastSubmission: false });
        } else {
          const grant = new provider.Grant({ accountId: details.session!.accountId!, clientId: OIDC_CLIENT_ID });
          grant.addOIDCScope(details.params.scope ?? 'openid');
          const grantId = await grant.save();
          await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
        }
      } catch (err) {
        res.statusCode = 500;
        res.end(String(err));
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    issuer,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface StoredCookie {
  value: string;
  path: string;
}

/**
 * A scripted browser: one cookie jar per host name (cookies ignore ports, so the app runs on
 * `localhost` and the OP on `127.0.0.1`), redirects followed by hand.
 */
export class Browser {
  readonly jars = new Map<string, Map<string, StoredCookie>>();

  /**
   * `tls`: the app's public URL is https on a loopback name, served by the gateway's plain-http port
   * of the same number, as a TLS-terminating proxy would: such URLs are fetched over http.
   */
  readonly opts: { tls?: boolean };
  constructor(opts: { tls?: boolean } = {}) {
    this.opts = opts;
  }

  cookieHeader(url: URL): string | undefined {
    const jar = this.jars.get(url.hostname);
    if (!jar) return undefined;
    const parts = [...jar.entries()].filter(([, c]) => url.pathname.startsWith(c.path)).map(([n, c]) => `${n}=${c.value}`);
    return parts.length ? parts.join('; ') : undefined;
  }

  cookie(host: string, name: string): string | undefined {
    return this.jars.get(host)?.get(name)?.value;
  }

  setCookie(host: string, name: string, value: string, path = '/'): void {
    if (!this.jars.has(host)) this.jars.set(host, new Map());
    this.jars.get(host)!.set(name, { value, path });
  }

  store(url: URL, res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const path = attrs.map((a) => a.trim()).find((a) => a.toLowerCase().startsWith('path='))?.slice(5) || '/';
      const expired = attrs.some((a) => /^expires=/i.test(a.trim()) && new Date(a.trim().slice(8)).getTime() < Date.now()) || attrs.some((a) => /^max-age=0$/i.test(a.trim()));
      if (!this.jars.has(url.hostname)) this.jars.set(url.hostname, new Map());
      const jar = this.jars.get(url.hostname)!;
      if (expired || value === '') jar.delete(name);
      else jar.set(name, { value, path });
    }
  }

  async fetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
    const url = new URL(input);
    const headers = new Headers(init.headers);
    const cookie = this.cookieHeader(url);
    if (cookie && !headers.has('cookie')) headers.set('cookie', cookie);
    const sent = new URL(url);
    if (this.opts.tls && sent.protocol === 'https:' && sent.hostname === 'localhost') sent.protocol = 'http:';
    const res = await fetch(sent, { ...init, headers, redirect: 'manual' });
    this.store(url, res);
    return res;
  }

  async json<T = unknown>(input: string | URL, init: RequestInit = {}): Promise<{ status: number; body: T }> {
    const headers = new Headers(init.headers);
    if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
    const res = await this.fetch(input, { ...init, headers });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** Follow redirects from `res` until a non-redirect (or a redirect to `stopAt`'s origin+path). */
  async follow(start: Response, from: URL, stopAt?: (url: URL) => boolean): Promise<{ res: Response; url: URL }> {
    let res = start;
    let url = from;
    for (let i = 0; i < 20 && res.status >= 300 && res.status < 400; i++) {
      const next = new URL(res.headers.get('location')!, url);
      if (stopAt?.(next)) return { res, url: next };
      await res.body?.cancel();
      res = await this.fetch(next);
      url = next;
    }
    return { res, url };
  }
}

/**
 * Sign in through the gateway with the OIDC provider: CSRF token, POST signin (authorization code +
 * PKCE + state + nonce), the OP's login and consent, the callback. Returns the callback's response.
 */
export async function oidcSignIn(browser: Browser, appUrl: string, loginHint: string, landingUrl = `${appUrl}/dashboard`): Promise<{ callback: Response; landing: URL }> {
  const { body: csrf } = await browser.json<{ csrfToken: string }>(`${appUrl}/api/auth/csrf`);
  // Every sign-in is a fresh login at the OP (no OP session to switch away from).
  browser.jars.delete('127.0.0.1');
  const signin = await browser.fetch(`${appUrl}/api/auth/signin/oidc?prompt=login&login_hint=${encodeURIComponent(loginHint)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrfToken: csrf.csrfToken, callbackUrl: landingUrl }).toString(),
  });
  if (signin.status !== 302) throw new Error(`signin answered ${signin.status}: ${await signin.text()}`);
  const atOp = new URL(signin.headers.get('location')!);
  const { res: toApp, url: callbackUrl } = await browser.follow(await browser.fetch(atOp), atOp, (u) => u.pathname === '/api/auth/callback/oidc');
  if (callbackUrl.pathname !== '/api/auth/callback/oidc') throw new Error(`OP did not redirect back: ${toApp.status} ${await toApp.text()}`);
  const callback = await browser.fetch(callbackUrl);
  return { callback, landing: new URL(callback.headers.get('location') ?? '/', appUrl) };
}

export interface AuthTestSystem {
  config: Config;
  system: RunningSystem;
  /** where the gateway listens (plain http) */
  url: string;
  /** the configured public URL: `url`, or with `tls` the same on https (Browser `tls` fetches it over http) */
  publicUrl: string;
  op: LocalOp;
  stop(): Promise<void>;
  /** the same database and OP, new config values (e.g. a rotated AUTH_SECRET); services restart */
  restart(overrides: Partial<Config>): Promise<void>;
}

/**
 * The auth service and the gateway (plus `extra` services) over the in-process bus on a fresh
 * database, with a local OP configured as the OIDC provider and the app on http://localhost:<port>.
 */
export async function startAuthSystem(
  env: Record<string, string | undefined> = {},
  opts: {
    extra?: ServiceDefinition[];
    auth?: AuthServiceOptions;
    /** NATS instead of the in-process bus */ natsUrl?: string;
    /** the public URL is https (a TLS proxy in front, AUTH_TRUST_HOST=true) on the gateway's port number */ tls?: boolean;
  } = {},
): Promise<AuthTestSystem> {
  const port = await freePort();
  const appUrl = `http://localhost:${port}`;
  const publicUrl = opts.tls ? `https://localhost:${port}` : appUrl;
  const op = await startOp(publicUrl);
  let config = await testSystemConfig({
    PORT: String(port),
    PUBLIC_APP_URL: publicUrl,
    AUTH_CALLBACK_URL: publicUrl,
    ...(opts.tls ? { AUTH_TRUST_HOST: 'true' } : {}),
    OIDC_ISSUER: op.issuer,
    OIDC_CLIENT_ID,
    OIDC_CLIENT_SECRET,
    TOTP_ENCRYPTION_KEY: 'a'.repeat(64),
    ...env,
  }, { natsUrl: opts.natsUrl });
  const services = () => [createAuthService(opts.auth), ...(opts.extra ?? []), gatewayService];
  let system = await startSystem(config, { services: services() });
  const t: AuthTestSystem = {
    get config() {
      return config;
    },
    get system() {
      return system;
    },
    url: appUrl,
    publicUrl,
    op,
    async stop() {
      await system.stop();
      await op.stop();
    },
    async restart(overrides) {
      await system.stop();
      config = { ...config, ...overrides };
      system = await startSystem(config, { services: services() });
    },
  };
  return t;
}

/** Sign in a fresh browser as `loginHint` and return it with the user's id. */
export async function signedIn(t: AuthTestSystem, loginHint: string): Promise<{ browser: Browser; userId: string }> {
  const browser = new Browser();
  const { callback } = await oidcSignIn(browser, t.url, loginHint);
  if (callback.status !== 302) throw new Error(`callback answered ${callback.status}`);
  const me = await browser.json<{ id: string }>(`${t.url}/api/auth/me`);
  if (me.status !== 200) throw new Error(`/api/auth/me answered ${me.status}: ${JSON.stringify(me.body)}`);
  return { browser, userId: me.body.id };
}
