import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type Config } from '../../services/runtime/src/index.ts';
import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, startOp, type LocalOp } from '../../services/auth/test/helpers.ts';
import { startSystem, type RunningSystem } from '../../tools/system.ts';
import { testSystemConfig } from '../../tools/testenv/index.ts';
import { ensureUiBuilt, hasChromium, launchChromium } from './support.ts';

/**
 * The strict Content-Security-Policy (#19.9) must not break any screen: Chromium walks every page
 * of the app signed in as an administrator (and the public ones signed out), and every CSP
 * violation it reports — through the `securitypolicyviolation` event or the console — fails.
 */

const SIGNED_OUT = ['/login', '/impressum', '/datenschutz'];
const SIGNED_IN = [
  '/dashboard',
  '/onboarding',
  '/tasks',
  '/topics',
  '/achievements',
  '/review',
  '/stats',
  '/progress',
  '/settings',
  '/settings/notifications',
  '/settings/integrations',
  '/settings/calendar',
  '/settings/connect',
  '/settings/security',
  '/settings/vacation',
  '/wishlist',
  '/api-keys',
  '/setup/2fa',
  '/admin',
  '/no-such-page',
];

let op: LocalOp;
let system: RunningSystem;
let config: Config;
let url: string;
let browser: Browser;
let context: BrowserContext;
const violations: string[] = [];

beforeAll(async () => {
  if (!hasChromium) return;
  await ensureUiBuilt();
  const port = await freePort();
  url = `http://localhost:${port}`;
  op = await startOp(url);
  config = await testSystemConfig({ PORT: String(port), HOST: '127.0.0.1', PUBLIC_APP_URL: url, AUTH_CALLBACK_URL: url, OIDC_ISSUER: op.issuer, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, TOTP_ENCRYPTION_KEY: 'c'.repeat(64) });
  system = await startSystem(config);
  browser = await launchChromium();
  context = await browser.newContext({ baseURL: url });
  await context.exposeBinding('__reportCsp', (_source, v: string) => void violations.push(v));
  // Init scripts run before the page's own and are not subject to its policy.
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { __reportCsp: (v: string) => void }).__reportCsp(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ${location.pathname}`);
    });
  });
}, 120_000);

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close();
  await system?.stop();
  await op?.stop();
});

async function visit(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await page.waitForLoadState('networkidle');
}

describe.skipIf(!hasChromium)('Content-Security-Policy in Chromium', () => {
  it('is sent with the pages and the app shell', async () => {
    const res = await fetch(`${url}/login`);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    expect(res.headers.get('permissions-policy')).toContain('camera=()');
  });

  it('Permissions-Policy: passkeys and the clipboard for the app, the camera, microphone and location for nobody (#56.13)', async () => {
    const page = await context.newPage();
    const headerErrors: string[] = [];
    page.on('console', (m) => {
      if (/Permissions-Policy|Feature Policy/i.test(m.text())) headerErrors.push(m.text());
    });
    await visit(page, '/login');
    const allowed = await page.evaluate((features) => {
      const policy = (document as unknown as { featurePolicy?: { allowsFeature(f: string): boolean } }).featurePolicy;
      return policy ? Object.fromEntries(features.map((f) => [f, policy.allowsFeature(f)])) : 'no featurePolicy';
    }, ['camera', 'microphone', 'geolocation', 'usb', 'publickey-credentials-get', 'publickey-credentials-create', 'clipboard-write']);
    expect(allowed).toEqual({
      camera: false,
      microphone: false,
      geolocation: false,
      usb: false,
      'publickey-credentials-get': true,
      'publickey-credentials-create': true,
      'clipboard-write': true,
    });
    // every feature named is one Chromium knows (an unknown one is reported on the console)
    expect(headerErrors).toEqual([]);
    await page.close();
  });

  it('walking every screen, signed out and signed in as an administrator, reports no violation', async () => {
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(`console: ${m.text()}`);
    });
    for (const path of SIGNED_OUT) await visit(page, path);
    await page.goto(`/login?login_hint=${encodeURIComponent('csp@example.test')}`);
    await page.locator('button[data-provider="oidc"]:not([disabled])').click();
    await page.waitForURL(/\/(dashboard|onboarding)/);
    const me = (await (await page.request.get('/api/auth/me')).json()) as { id: string };
    // the administrator's screens too: restart with this user in ADMIN_USER_IDS (the session survives)
    await system.stop();
    config = { ...config, ADMIN_USER_IDS: [me.id] };
    system = await startSystem(config);
    for (const path of SIGNED_IN) await visit(page, path);
    await page.goto('/admin');
    await page.getByTestId('admin-stats').waitFor();
    expect(violations).toEqual([]);
  }, 120_000);
});
