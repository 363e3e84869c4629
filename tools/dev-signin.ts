import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config, DevSignInClient, Logger } from '@tasksvc/runtime';
import { signInOrigins } from '../services/auth/src/domain/origins.ts';

/**
 * The development sign-in of `npm start`: a real OpenID provider (oidc-provider) on its own loopback
 * port whose login page asks only for a name and an e-mail address. The app signs in through it on
 * the ordinary Auth.js OIDC path, so everything after sign-in is the production code path.
 * Anyone who reaches the page can be anyone: config.ts refuses it with RUNTIME_ENV=production.
 */
export interface DevSignIn extends DevSignInClient {
  stop(): Promise<void>;
}

const CLIENT_ID = 'task-service-development';
/** The provider id in the app (`/api/auth/callback/dev`). */
export const DEV_PROVIDER_ID = 'dev';

type Stored = { payload: Record<string, unknown>; expiresAt: number };

/** oidc-provider's storage, in memory: sign-ins only need to survive one process. */
function memoryAdapter(): new (model: string) => object {
  const store = new Map<string, Stored>();
  const get = (key: string) => {
    const hit = store.get(key);
    if (hit && hit.expiresAt < Date.now()) store.delete(key);
    return hit && hit.expiresAt >= Date.now() ? hit.payload : undefined;
  };
  return class {
    readonly model: string;
    constructor(model: string) {
      this.model = model;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      store.set(`${this.model}:${id}`, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
      if (typeof payload.uid === 'string') store.set(`uid:${payload.uid}`, { payload: { id }, expiresAt: Date.now() + (expiresIn ?? 3600) * 1000 });
    }
    async find(id: string) {
      return get(`${this.model}:${id}`);
    }
    async findByUid(uid: string) {
      const ref = get(`uid:${uid}`);
      return ref ? get(`${this.model}:${String(ref.id)}`) : undefined;
    }
    async findByUserCode() {
      return undefined;
    }
    async consume(id: string) {
      const p = get(`${this.model}:${id}`);
      if (p) p.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(`${this.model}:${id}`);
    }
    async revokeByGrantId(grantId: string) {
      for (const [key, v] of store) if (v.payload.grantId === grantId) store.delete(key);
    }
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#1c1c1c}
.warn{background:#fff4d6;border:1px solid #d9a300;border-radius:.5rem;padding:.75rem}label{display:block;margin:1rem 0 .25rem;font-weight:600}
input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}button{margin-top:1.25rem;padding:.6rem 1.2rem;font:inherit;font-weight:600}</style></head><body>${body}</body></html>`;
}

function loginForm(uid: string, error = ''): string {
  return page(
    'Development sign-in — Task Service',
    `<h1>Development sign-in</h1>
<p class="warn" role="note"><strong>For trying Task Service on your own machine.</strong> Choose any name and e-mail address: there is no password,
so anyone who can open this page can sign in as anyone. It runs only with <code>npm start</code> in development and never in production.</p>
${error ? `<p role="alert" style="color:#b00020">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}">
<label for="name">Name</label><input id="name" name="name" required maxlength="100" value="Developer" autocomplete="name">
<label for="email">E-mail</label><input id="email" name="email" type="email" required maxlength="200" value="developer@localhost.test" autocomplete="email">
<button type="submit">Sign in</button>
</form>`,
  );
}

async function formBody(req: IncomingMessage): Promise<URLSearchParams> {
  let raw = '';
  for await (const chunk of req) {
    raw += String(chunk);
    if (raw.length > 10_000) throw new Error('form too large');
  }
  return new URLSearchParams(raw);
}

/** The warning while development sign-in is on and the app listens beyond loopback (HOST), else undefined. */
export function exposedDevSignInWarning(host: string): string | undefined {
  if (host === 'localhost' || host === '::1' || host.startsWith('127.')) return undefined;
  return `THE APP LISTENS ON HOST=${host} WHILE DEVELOPMENT SIGN-IN IS ON: anyone who can reach this machine can open the app (the sign-in provider itself stays on 127.0.0.1). Set HOST=127.0.0.1 to keep it to this machine, or DEV_SIGNIN=false.`;
}

/**
 * Start the provider for this app. The browser reaches it at 127.0.0.1 on a free port (so only on
 * this machine); its only client is the app's `dev` provider.
 */
export async function startDevSignIn(config: Config, log: Logger): Promise<DevSignIn> {
  const { default: Provider } = await import('oidc-provider');
  // Always on loopback, whatever HOST and the app's host name are: it signs anyone in as anyone, so
  // only someone at this machine may reach it (#56.4). 127.0.0.1 rather than the app's name (localhost)
  // also keeps the two cookie jars apart.
  const host = '127.0.0.1';
  const accounts = new Map<string, { name: string; email: string }>();
  const clientSecret = randomBytes(24).toString('base64url');
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

  // Listening first tells the issuer's port; requests are handled once the provider exists (below).
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://${host}:${port}`;

  const provider = new Provider(issuer, {
    adapter: memoryAdapter(),
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: clientSecret,
        // every loopback name of this machine signs in (the printed 127.0.0.1 address as well as localhost)
        redirect_uris: signInOrigins(config.AUTH_CALLBACK_URL).map((o) => `${o}/api/auth/callback/${DEV_PROVIDER_ID}`),
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [{ ...signingKey, kid: 'dev', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    ttl: { Session: 3600, Interaction: 3600, Grant: 3600, AccessToken: 600, AuthorizationCode: 60, IdToken: 600 },
    async findAccount(_ctx: unknown, id: string) {
      const account = accounts.get(id);
      if (!account) return undefined;
      return { accountId: id, claims: () => ({ sub: id, email: account.email, email_verified: true, name: account.name }) };
    },
    async renderError(ctx: { type: string; body: string }, out: { error?: string; error_description?: string }) {
      ctx.type = 'html';
      ctx.body = page('Development sign-in failed', `<h1>Development sign-in failed</h1><p>${escapeHtml(out.error_description ?? out.error ?? 'unknown error')}</p><p><a href="${escapeHtml(config.PUBLIC_APP_URL)}/login">Back to Task Service</a></p>`);
    },
  });
  const callback = provider.callback();

  /** `/interaction/<uid>`: a login prompt shows the form; consent is implied (the app is the only client). */
  async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'consent') {
      const grant = new provider.Grant({ accountId: String(details.session?.accountId), clientId: CLIENT_ID });
      grant.addOIDCScope(String(details.params.scope ?? 'openid'));
      return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    }
    if (req.method !== 'POST') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(loginForm(details.uid));
      return;
    }
    const form = await formBody(req);
    const name = (form.get('name') ?? '').trim();
    const email = (form.get('email') ?? '').trim().toLowerCase();
    if (!name || !/^[^@\s]+@[^@\s]+$/.test(email)) {
      res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' }).end(loginForm(details.uid, 'Enter a name and an e-mail address.'));
      return;
    }
    // The subject follows the e-mail address, so the same address is the same account after a restart.
    const accountId = createHash('sha256').update(email).digest('hex').slice(0, 32);
    accounts.set(accountId, { name, email });
    log.info({ email }, 'development sign-in');
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith('/interaction/')) return void callback(req, res);
    interaction(req, res).catch((err: unknown) => {
      log.warn({ err: (err as Error).message }, 'development sign-in interaction failed');
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' }).end(page('Development sign-in', `<p>This sign-in expired. <a href="${escapeHtml(config.PUBLIC_APP_URL)}/login">Start again</a>.</p>`));
    });
  });

  return {
    issuer,
    clientId: CLIENT_ID,
    clientSecret,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
