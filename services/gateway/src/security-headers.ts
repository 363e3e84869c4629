import type { FastifyInstance } from 'fastify';
import { PAGE_CSS_HASH } from './pages.ts';

/**
 * The Content-Security-Policy of every response. Scripts only from the app's own origin (the Vite
 * bundle; no inline script anywhere), styles from the app plus the server-rendered pages' one inline
 * stylesheet by hash (style attributes allowed), nothing embeds the app, no plugins, no <base> tricks. `form-action` is left
 * out on purpose: Chromium applies it to the redirect chain of the sign-in form, which ends at the
 * configured OpenID provider.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  `style-src 'self' ${PAGE_CSS_HASH}`,
  // style attributes (Solid's style props, chart widths) cannot run code; <style> elements stay hashed
  "style-src-attr 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'strict-transport-security': 'max-age=63072000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  // the iCal feed's token travels in a URL: never hand a URL to another site
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** Security headers on every response, set before anything can answer. */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (_req, reply, done) => {
    reply.headers(HEADERS);
    done();
  });
}
