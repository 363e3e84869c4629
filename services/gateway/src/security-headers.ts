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

/**
 * The browser features a page of the app may use: passkeys (WebAuthn) and writing to the clipboard
 * (copy buttons), only for the app's own origin; every other powerful feature is off, also for
 * anything the app might ever embed, so injected markup cannot ask for the camera or the location.
 */
export const PERMISSIONS_POLICY = [
  'publickey-credentials-get=(self)',
  'publickey-credentials-create=(self)',
  'clipboard-write=(self)',
  ...['accelerometer', 'autoplay', 'camera', 'display-capture', 'encrypted-media', 'fullscreen', 'geolocation', 'gyroscope', 'hid', 'idle-detection', 'magnetometer', 'microphone', 'midi', 'payment', 'picture-in-picture', 'screen-wake-lock', 'serial', 'usb', 'xr-spatial-tracking'].map((f) => `${f}=()`),
].join(', ');

const HEADERS: Record<string, string> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'strict-transport-security': 'max-age=63072000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  // the iCal feed's token travels in a URL: never hand a URL to another site
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'permissions-policy': PERMISSIONS_POLICY,
};

/** Security headers on every response, set before anything can answer. */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (_req, reply, done) => {
    reply.headers(HEADERS);
    done();
  });
}
