import { AppError, SESSION_COOKIE_RE } from '@tasksvc/proto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayDeps } from './deps.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The verdict for one request: null when it may proceed, otherwise why it is refused. Pure, so the
 * rule is tested without a server.
 *
 * Only state-changing requests that the session cookie authenticates are checked: a Bearer API key
 * is never attached by a browser on its own, so a cross-site page cannot use one. SameSite=Lax does
 * not help against another port of the same host (same site), hence the origin check:
 * - `Origin` present: it must be one of the app's own origins (`null` never is);
 * - else `Sec-Fetch-Site` present: it must be `same-origin` (or `none`, a user's own navigation);
 * - neither: not a browser (every browser since 2020 sends one of them on such a request), so there
 *   is no victim's browser to abuse — the same rule as Go's net/http CrossOriginProtection.
 */
export function crossOriginVerdict(
  req: { method: string; headers: Record<string, string | string[] | undefined> },
  isOwnOrigin: (origin: string) => boolean,
): string | null {
  if (SAFE_METHODS.has(req.method)) return null;
  const cookie = req.headers.cookie;
  if (typeof cookie !== 'string' || !SESSION_COOKIE_RE.test(cookie)) return null;
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string' && /^Bearer\s/i.test(authorization)) return null;
  const origin = req.headers.origin;
  if (typeof origin === 'string') return isOwnOrigin(origin.toLowerCase()) ? null : `requests from origin ${origin} may not change anything here`;
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none' ? null : `a ${site} request may not change anything here`;
  return null;
}

/** The app's origins: the configured public URLs, and the origin this request was sent to (Host is checked in app.ts). */
const isOwnOrigin = (req: FastifyRequest, configured: string[]) => (origin: string) => configured.includes(origin) || origin === `${req.protocol}://${req.host}`.toLowerCase();

/** One gateway hook: refuse cross-origin state-changing requests carrying the session cookie. */
export function registerSameOrigin(app: FastifyInstance, deps: GatewayDeps): void {
  const configured = [deps.config.PUBLIC_APP_URL, deps.config.AUTH_CALLBACK_URL].map((u) => new URL(u).origin.toLowerCase());
  app.addHook('onRequest', (req, _reply, done) => {
    const refused = crossOriginVerdict(req, isOwnOrigin(req, configured));
    done(refused ? new AppError('FORBIDDEN', `cross-origin request refused: ${refused}`) : undefined);
  });
}
