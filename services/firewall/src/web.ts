// Web component (unprivileged): a small HTML UI and a JSON API that forwards to the core socket.
// Login with the component's own password; session cookie (HttpOnly, SameSite=Strict) plus a
// per-session CSRF token required on every state-changing request.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import type { FirewallConfig } from './config.ts';
import { webEnv } from './env.ts';
import { request, type Reply } from './socket.ts';
import { APP_JS, PAGE_HTML } from './web-assets.ts';

const COOKIE = 'tfw_session';
const SESSION_TTL_MS = 12 * 3600_000;
const MAX_BODY = 8 * 1024 * 1024;
const LOGIN_WINDOW_MS = 60_000;
const LOGIN_MAX_FAILURES = 10;

interface Session {
  csrf: string;
  expires: number;
}

export interface WebOptions {
  socketPath: string;
  password: string;
  logger: Logger;
  /** Mark the session cookie Secure (served over TLS, here or by a proxy in front). */
  secureCookie?: boolean;
  /** Host names accepted besides IP literals and localhost (DNS-rebinding guard). */
  allowedHosts?: string[];
  /** PEM certificate and key: serve HTTPS. */
  tls?: { cert: Buffer; key: Buffer };
}

/**
 * The Host header names this server: an IP literal, localhost, or a configured name. A name a
 * rebinding attacker points at us (their own domain) is refused.
 */
export function hostAllowed(header: string | undefined, allowed: readonly string[]): boolean {
  if (!header) return false;
  const m = /^(\[[^\]]+\]|[^:]+)(?::\d+)?$/.exec(header.trim().toLowerCase());
  if (!m) return false;
  const host = m[1]!.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return isIP(host) !== 0 || host === 'localhost' || allowed.includes(host);
}

function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) throw Object.assign(new Error('request body too large'), { status: 413 });
    chunks.push(c);
  }
  if (!size) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw Object.assign(new Error('body must be JSON'), { status: 400 });
  }
}

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

export function createWebServer(opts: WebOptions): Server {
  const sessions = new Map<string, Session>();
  const failures = new Map<string, { count: number; since: number }>();

  const sessionOf = (req: IncomingMessage): Session | undefined => {
    const token = cookieOf(req, COOKIE);
    const s = token ? sessions.get(token) : undefined;
    if (!s || !token) return undefined;
    if (s.expires < Date.now()) {
      sessions.delete(token);
      return undefined;
    }
    return s;
  };

  const forward = async (res: ServerResponse, type: string, payload: unknown = {}) => {
    let reply: Reply;
    try {
      reply = await request(opts.socketPath, type, payload);
    } catch (e) {
      opts.logger.error({ err: e }, 'core socket unreachable');
      send(res, 502, { success: false, error: `firewall core is not reachable at ${opts.socketPath}: ${(e as Error).message}` });
      return;
    }
    send(res, reply.success ? 200 : 400, reply);
  };

  const cookieAttrs = `HttpOnly; SameSite=Strict; Path=/${opts.secureCookie ? '; Secure' : ''}`;
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((e: unknown) => {
      const status = (e as { status?: number }).status ?? 500;
      if (status === 500) opts.logger.error({ err: e }, 'web request failed');
      if (!res.headersSent) send(res, status, { success: false, error: status === 500 ? 'internal error' : (e as Error).message });
    });
  };
  return opts.tls ? createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key }, listener) : createServer(listener);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const path = url.pathname;

    if (path !== '/healthz' && !hostAllowed(req.headers.host, opts.allowedHosts ?? [])) {
      send(res, 421, { success: false, error: `Host ${req.headers.host ?? '(none)'} is not served here; add it to FIREWALL_WEB_ALLOWED_HOSTS` });
      return;
    }

    if (method === 'GET' && (path === '/' || path === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS });
      res.end(PAGE_HTML);
      return;
    }
    if (method === 'GET' && path === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', ...SECURITY_HEADERS });
      res.end(APP_JS);
      return;
    }
    if (method === 'GET' && path === '/healthz') {
      send(res, 200, { success: true, data: { status: 'ok' } });
      return;
    }
    if (!path.startsWith('/api/')) {
      send(res, 404, { success: false, error: 'not found' });
      return;
    }

    const mutating = method !== 'GET' && method !== 'HEAD';
    // Cross-site form posts cannot set a JSON content type without a CORS preflight (which we never allow).
    if (mutating && !(req.headers['content-type'] ?? '').startsWith('application/json')) {
      send(res, 415, { success: false, error: 'content-type must be application/json' });
      return;
    }

    if (path === '/api/login' && method === 'POST') {
      const ip = req.socket.remoteAddress ?? '?';
      const f = failures.get(ip);
      if (f && Date.now() - f.since < LOGIN_WINDOW_MS && f.count >= LOGIN_MAX_FAILURES) {
        send(res, 429, { success: false, error: 'too many failed logins; try again later' });
        return;
      }
      const body = (await readBody(req)) as { password?: unknown };
      if (typeof body.password !== 'string' || !safeEqual(body.password, opts.password)) {
        const cur = f && Date.now() - f.since < LOGIN_WINDOW_MS ? f : { count: 0, since: Date.now() };
        cur.count++;
        failures.set(ip, cur);
        send(res, 401, { success: false, error: 'wrong password' });
        return;
      }
      failures.delete(ip);
      const token = randomBytes(32).toString('base64url');
      const session = { csrf: randomBytes(24).toString('base64url'), expires: Date.now() + SESSION_TTL_MS };
      sessions.set(token, session);
      send(res, 200, { success: true, data: { csrf_token: session.csrf } }, {
        'set-cookie': `${COOKIE}=${token}; ${cookieAttrs}; Max-Age=${SESSION_TTL_MS / 1000}`,
      });
      return;
    }

    const session = sessionOf(req);
    if (path === '/api/session' && method === 'GET') {
      send(res, 200, { success: true, data: { authenticated: !!session, csrf_token: session?.csrf ?? null } });
      return;
    }
    if (!session) {
      send(res, 401, { success: false, error: 'login required' });
      return;
    }
    if (mutating) {
      const token = req.headers['x-csrf-token'];
      if (typeof token !== 'string' || !safeEqual(token, session.csrf)) {
        send(res, 403, { success: false, error: 'missing or wrong X-CSRF-Token' });
        return;
      }
    }

    const actor = 'web';
    if (path === '/api/logout' && method === 'POST') {
      const token = cookieOf(req, COOKIE);
      if (token) sessions.delete(token);
      send(res, 200, { success: true }, { 'set-cookie': `${COOKIE}=; ${cookieAttrs}; Max-Age=0` });
      return;
    }
    if (path === '/api/status' && method === 'GET') return forward(res, 'GET_STATUS');
    if (path === '/api/rules' && method === 'GET') return forward(res, 'GET_RULES');
    if (path === '/api/options' && method === 'GET') return forward(res, 'GET_OPTIONS');
    if (path === '/api/audit' && method === 'GET') {
      const limit = Number(url.searchParams.get('limit') ?? 200);
      return forward(res, 'GET_LOG', { limit: Number.isFinite(limit) ? limit : 200 });
    }
    const m = /^\/api\/rules\/([a-z]+)$/.exec(path);
    if (m && method === 'PUT') {
      const body = (await readBody(req)) as { rules?: unknown };
      return forward(res, 'SAVE_RULES', { rule_type: m[1], rules: body.rules, actor });
    }
    if (path === '/api/apply' && method === 'POST') return forward(res, 'APPLY_RULES', { actor });
    if (path === '/api/confirm' && method === 'POST') return forward(res, 'ACCEPT', { actor });
    send(res, 404, { success: false, error: 'not found' });
  }
}

export async function runWeb(config: FirewallConfig, logger: Logger): Promise<void> {
  const env = webEnv();
  if (!env.password) throw new Error('set FIREWALL_WEB_PASSWORD or FIREWALL_WEB_PASSWORD_FILE: the web component never runs without a login');
  const tls = env.tlsCertFile && env.tlsKeyFile ? { cert: readFileSync(env.tlsCertFile), key: readFileSync(env.tlsKeyFile) } : undefined;
  const server = createWebServer({ socketPath: config.socket_path, password: env.password, logger, secureCookie: env.secureCookie, allowedHosts: env.allowedHosts, tls });
  await new Promise<void>((resolve) => server.listen(env.port, env.host, resolve));
  logger.info({ host: env.host, port: env.port, tls: !!tls, socket: config.socket_path }, 'firewall web ready');
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
