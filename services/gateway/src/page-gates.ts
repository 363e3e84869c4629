import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { secondFactorPageRpc, type Identity } from '@tasksvc/proto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { resolveIdentity } from './identity.ts';

/** Pages anyone may open, and the pages that settle a pending second factor. */
const OPEN_PAGES = new Set(['/login', '/login/2fa', '/setup/2fa', '/impressum', '/datenschutz', '/offline']);

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, text: string, extraHead = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${extraHead}<title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1><p>${text}</p></main></body></html>`;
}

function pathOf(req: FastifyRequest): string {
  return req.url.split('?')[0] ?? '/';
}

/**
 * The path as the browser's router will see it: dot segments resolved, percent-escapes decoded,
 * repeated slashes collapsed, lower-cased, no trailing slash. `/ADMIN`, `//admin`, `/%61dmin/`,
 * `/x/../admin` all name the admin page, so every gate decides on this form.
 */
export function normalisePagePath(raw: string): string {
  let path = new URL(raw.replace(/^[/\\]+/, '/'), 'http://gate.invalid').pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // a malformed escape stays as sent
  }
  return path.replace(/[/\\]+/g, '/').toLowerCase().replace(/(.)\/$/, '$1');
}

/**
 * A raw path that is an API call whatever the normalisation: `/api/` then segments of characters the
 * URL parser keeps as they are (no `%`, `\\`, whitespace or control characters, which it decodes,
 * turns into `/` or drops), none of them empty or starting with a dot (no `//`, no `.` or `..`
 * segment), and at least one segment (`/api/` alone is a page: `/api`). normalisePagePath leaves such a path under `/api/` (page-gates.test.ts), so the gate
 * passes it without building a URL: that was most of what the gate cost an API GET.
 */
const SEGMENT = "[A-Za-z0-9_~!$&'()*+,;=:@-][A-Za-z0-9._~!$&'()*+,;=:@-]*";
// one way to match any path (a segment cannot hold `/`), so a long path that fails costs one pass
const PLAIN_API_PATH = new RegExp(`^/api/${SEGMENT}(?:/${SEGMENT})*/?$`);

export function plainApiPath(raw: string): boolean {
  return PLAIN_API_PATH.test(raw);
}

const isAdminPath = (path: string) => path === '/admin' || path.startsWith('/admin/');

/** A page path (not an API call, not a file such as /assets/app.js). */
function isPagePath(path: string): boolean {
  return !path.startsWith('/api/') && !/\.[A-Za-z0-9]+$/.test(path.slice(path.lastIndexOf('/')));
}

/**
 * Server-side gates for pages:
 * - `/admin` (and below): anonymous → 401 page that forwards to /login; signed in but not in
 *   ADMIN_USER_IDS → 403; an admin gets the UI shell.
 * - `/setup/2fa`: needs a signed-in user (even one restricted by REQUIRE_2FA).
 * - any other page GET by a signed-in user whose second factor is pending → 302 to `/setup/2fa`
 *   (no factor yet while REQUIRE_2FA is true) or `/login/2fa` (factor not yet proven this session).
 */
export async function registerPageGates(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const shell = deps.uiDir && existsSync(join(deps.uiDir, 'index.html')) ? deps.uiDir : null;

  const sendShell = (reply: FastifyReply) => {
    void reply.header('cache-control', 'no-cache');
    if (shell) return reply.sendFile('index.html', shell);
    return reply.type('text/html; charset=utf-8').send(page('Task Service', 'Loading…'));
  };

  const signInFirst = (req: FastifyRequest, reply: FastifyReply) => {
    const target = `/login?callbackUrl=${encodeURIComponent(req.url)}`;
    return reply
      .code(401)
      .header('cache-control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(page('Sign in required', `Please <a href="${escapeHtml(target)}">sign in</a>.`, `<meta http-equiv="refresh" content="0;url=${escapeHtml(target)}">`));
  };

  const identityOf = (req: FastifyRequest): Promise<Identity | null> => resolveIdentity(req, deps.bus, deps.config);

  const pendingRedirect = async (req: FastifyRequest, reply: FastifyReply, user: Identity): Promise<boolean> => {
    if (user.secondFactorOk || user.method !== 'session') return false;
    const { page: target } = await deps.bus.request(secondFactorPageRpc, { cookie: req.headers.cookie }, { requestId: String(req.id), timeoutMs: 5_000 });
    if (!target || target === pathOf(req)) return false;
    await reply.code(302).header('cache-control', 'no-store').redirect(target);
    return true;
  };

  const admin = async (req: FastifyRequest, reply: FastifyReply) => {
    const user = await identityOf(req);
    if (!user) return signInFirst(req, reply);
    if (await pendingRedirect(req, reply, user)) return reply;
    if (!user.isAdmin) {
      // Still 403, but inside the app (its styles and navigation), which says why; plain HTML without a built UI.
      if (shell) return reply.code(403).header('cache-control', 'no-store').sendFile('index.html', shell);
      return reply.code(403).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page('Not allowed', 'This page is for administrators listed in ADMIN_USER_IDS.'));
    }
    return sendShell(reply);
  };

  app.get('/setup/2fa', async (req, reply) => {
    const user = await identityOf(req);
    if (!user) return signInFirst(req, reply);
    return sendShell(reply);
  });

  const redirectIfPending = async (req: FastifyRequest, reply: FastifyReply) => {
    const user = await identityOf(req).catch(() => null);
    if (user) await pendingRedirect(req, reply, user);
  };
  // callback style: an API request (most of them) passes without a promise and a microtask per hook
  app.addHook('onRequest', (req, reply, done) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return done();
    const raw = pathOf(req);
    if (plainApiPath(raw)) return done();
    const path = normalisePagePath(raw);
    if (!isPagePath(path)) return done();
    // one admin gate, on the normalised path, whatever route or fallback would answer the raw one
    if (isAdminPath(path)) return void admin(req, reply).then(() => done(), done);
    if (OPEN_PAGES.has(path) || !req.headers.cookie) return done();
    redirectIfPending(req, reply).then(() => done(), done);
  });
}
