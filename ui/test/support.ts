import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { freePort, type Config } from '../../services/runtime/src/index.ts';
import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, startOp } from '../../services/auth/test/helpers.ts';
import { startSystem, type RunningSystem } from '../../tools/system.ts';
import { testSystemConfig } from '../../tools/testenv/index.ts';

export const UI_DIR = new URL('..', import.meta.url).pathname;
export const DIST = join(UI_DIR, 'dist');
export const SCREENSHOTS = new URL('../../test-results/screenshots/', import.meta.url).pathname;
export const CHROMIUM = '/usr/bin/chromium';

function newestMtime(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((f) => newestMtime(join(path, f))));
}

/** Build the UI into ui/dist (what the gateway serves) when a source is newer than the build (build.test.ts typechecks). */
export async function ensureUiBuilt(): Promise<void> {
  const lock = join(UI_DIR, '.build-lock');
  // Two test files may start at once: one builds, the other waits for it (mkdir is atomic).
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      await sleep(250);
    }
  }
  try {
    // The bundle also takes code from proto (types) and the tasks domain (recurrence preview).
    const sources = [...['src', 'public', 'index.html', 'vite.config.ts', 'package.json'].map((p) => join(UI_DIR, p)), join(UI_DIR, '../proto/src'), join(UI_DIR, '../services/tasks/src/domain')];
    const built = existsSync(join(DIST, 'index.html')) ? statSync(join(DIST, 'index.html')).mtimeMs : 0;
    if (built >= Math.max(...sources.map(newestMtime))) return;
    // NODE_ENV=production: vitest sets `test`, which would make Solid bundle its development build.
    const run = (bin: string, args: string[]) => {
      const r = spawnSync(join(UI_DIR, 'node_modules/.bin', bin), args, { cwd: UI_DIR, encoding: 'utf8', env: { ...process.env, PUBLIC_APP_URL: '', NODE_ENV: 'production' } });
      if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
    };
    run('vite', ['build', '--logLevel', 'warn']);
  } finally {
    rmdirSync(lock);
  }
}

/** Debian's Chromium, headless, as in notes/real-peers.md §4. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export const hasChromium = existsSync(CHROMIUM);

/** Base32 (RFC 4648) → bytes, for the TOTP secret the enrolment screen shows. */
function base32(secret: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of secret.replace(/=+$/, '').toUpperCase()) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  const bytes = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

/** The current RFC 6238 code (SHA-1, 30 s, 6 digits), as an authenticator app computes it. */
export function totpCode(secret: string, at = Date.now()): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 30_000)));
  const h = createHmac('sha1', base32(secret)).update(counter).digest();
  const o = h[h.length - 1]! & 0xf;
  const n = ((h[o]! & 0x7f) << 24) | (h[o + 1]! << 16) | (h[o + 2]! << 8) | h[o + 3]!;
  return String(n % 1_000_000).padStart(6, '0');
}

export const VIEWPORTS = { phone: { width: 390, height: 844 }, desktop: { width: 1280, height: 800 } } as const;
/** [label, viewport] pairs for `it.each`. */
export const SIZES = Object.entries(VIEWPORTS) as [string, { width: number; height: number }][];

export interface ChromiumSuite {
  /** the running system's base URL (set once beforeAll has run) */
  readonly url: string;
  /** A page in a fresh browser context (closed after the suite); service workers blocked unless allowed. */
  newPage: (viewport: { width: number; height: number }, opts?: { serviceWorkers?: 'allow' | 'block'; locale?: string }) => Promise<Page>;
  /** A full-page screenshot `<prefix>-<name>-<width>.png` in SCREENSHOTS. */
  shot: (page: Page, name: string) => Promise<void>;
  /** Restart every service with changed configuration (same database, same URL). */
  restart: (overrides: Partial<Config>) => Promise<void>;
  /** the running system (its pool, to look into the database) */
  system: () => RunningSystem;
}

/**
 * The whole system and a Chromium for one test file: started in beforeAll (when Chromium exists),
 * stopped with every context it handed out in afterAll.
 */
export function chromiumSuite(prefix: string, defaults: { locale?: string; config?: Record<string, string> } = {}): ChromiumSuite {
  let ui: UiSystem | undefined;
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    if (!hasChromium) return;
    await ensureUiBuilt();
    ui = await startUiSystem(defaults.config);
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await ui?.stop();
  });
  return {
    get url() {
      return ui!.url;
    },
    newPage: async (viewport, opts = {}) => {
      const context = await browser!.newContext({ viewport, baseURL: ui!.url, serviceWorkers: opts.serviceWorkers ?? 'block', locale: opts.locale ?? defaults.locale });
      contexts.push(context);
      return context.newPage();
    },
    shot: async (page, name) => {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: join(SCREENSHOTS, `${prefix}-${name}-${page.viewportSize()!.width}.png`), fullPage: true });
    },
    restart: (overrides) => ui!.restart(overrides),
    system: () => ui!.system,
  };
}

/**
 * The controls (buttons, links, fields, menu items) a toast covers, one line each: where a toast is
 * the topmost thing over part of a control. The control in focus, fixed and sticky controls (top bar,
 * tab bar, floating add button, task panel or sheet) and open menus count wherever the page is
 * scrolled; everything else counts with the page scrolled to its end, where the content must end
 * above the toasts. Measured after two animation frames (whatever moves for a new toast has moved);
 * with no toast on screen that is a finding too, so a check never passes for want of a toast.
 */
export async function controlsUnderToasts(page: Page): Promise<string[]> {
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  return page.evaluate(() => {
    type Box = { left: number; top: number; right: number; bottom: number };
    const cut = (a: Box, b: Box): Box | null => {
      const r = { left: Math.max(a.left, b.left), top: Math.max(a.top, b.top), right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom) };
      return r.right - r.left > 0.5 && r.bottom - r.top > 0.5 ? r : null;
    };
    /** The part of `el` on screen: its box clipped by every scrolling or clipping ancestor. */
    const shown = (el: Element): Box | null => {
      let box: Box | null = el.getBoundingClientRect();
      if (box.right - box.left < 1 || box.bottom - box.top < 1) return null;
      for (let a = el.parentElement; a && box; a = a.parentElement) if (getComputedStyle(a).overflow !== 'visible') box = cut(box, a.getBoundingClientRect());
      return box && cut(box, { left: 0, top: 0, right: innerWidth, bottom: innerHeight });
    };
    const fixedOrMenu = (el: Element) => {
      for (let a: Element | null = el; a; a = a.parentElement) if (/fixed|sticky/.test(getComputedStyle(a).position) || a.getAttribute('role') === 'menu') return true;
      return false;
    };
    const name = (el: Element) => `${el.tagName.toLowerCase()} "${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}"`;
    const check = (which: (el: Element) => boolean, where: string) => {
      const toasts = [...document.querySelectorAll('.toast')].map(shown).filter((b): b is Box => b !== null);
      const found: string[] = [];
      const focused = document.activeElement && document.activeElement !== document.body ? [document.activeElement] : [];
      for (const el of new Set([...focused, ...document.querySelectorAll('button, a[href], input, select, textarea, [role="menuitem"]')])) {
        if (el.closest('.toasts') || !which(el) || getComputedStyle(el).visibility === 'hidden') continue;
        const box = shown(el);
        for (const t of toasts) {
          const o = box && cut(box, t);
          if (!o) continue;
          const top = document.elementFromPoint((o.left + o.right) / 2, (o.top + o.bottom) / 2);
          if (top?.closest('.toasts')) found.push(`${where}: ${name(el)} under a toast`);
        }
      }
      return found;
    };
    if (document.querySelectorAll('.toast').length === 0) return ['no toast on screen to check'];
    const scrolled = scrollY;
    const found = check((el) => el === document.activeElement || fixedOrMenu(el), 'in focus or fixed');
    scrollTo(0, document.scrollingElement!.scrollHeight);
    found.push(...check(() => true, 'at the end of the page'));
    scrollTo(0, scrolled);
    return found;
  });
}

export async function checkLayout(page: Page, name: string, groups: string[] = ['.page-head > *', '#main .card', '#main .kpi', '.primary-nav a']): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const [label, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    // Let layout settle after the resize (fonts, charts that follow their container).
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const report = await page.evaluate((groupSelectors: string[]) => {
      const problems: string[] = [];
      const doc = document.scrollingElement!;
      if (doc.scrollWidth > window.innerWidth) {
        // Name the culprits: elements sticking out on the right that no scrolling ancestor contains.
        const clipped = (el: Element) => {
          // Absolutely positioned boxes escape a scrolling ancestor unless it is also their containing block.
          if (getComputedStyle(el).position === 'absolute') return false;
          for (let a = el.parentElement; a; a = a.parentElement) if (/(auto|scroll|hidden)/.test(getComputedStyle(a).overflowX)) return true;
          return false;
        };
        const culprits = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5 && !clipped(el)).slice(0, 3);
        problems.push(`horizontal overflow: scrollWidth ${doc.scrollWidth} > innerWidth ${window.innerWidth}: ${culprits.map((c) => `${c.tagName.toLowerCase()}.${[...c.classList].join('.')}`).join(', ')}`);
      }
      const rect = (el: Element) => {
        const r = el.getBoundingClientRect();
        return { x: r.x + window.scrollX, y: r.y + window.scrollY, w: r.width, h: r.height };
      };
      const hit = (a: ReturnType<typeof rect>, b: ReturnType<typeof rect>) => a.x < b.x + b.w - 0.5 && b.x < a.x + a.w - 0.5 && a.y < b.y + b.h - 0.5 && b.y < a.y + a.h - 0.5;
      const describe = (el: Element) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${[...el.classList].join('.')} "${(el.textContent ?? '').trim().slice(0, 30)}"`;
      // Siblings of each group (cards, KPI tiles, nav items, the page title and its buttons) never overlap.
      for (const sel of groupSelectors) {
        const els = [...document.querySelectorAll(sel)].filter((e) => (e as HTMLElement).offsetParent !== null);
        for (let i = 0; i < els.length; i++)
          for (let j = i + 1; j < els.length; j++) {
            if (els[i]!.contains(els[j]!) || els[j]!.contains(els[i]!)) continue;
            if (hit(rect(els[i]!), rect(els[j]!))) problems.push(`${sel}: ${describe(els[i]!)} overlaps ${describe(els[j]!)}`);
          }
      }
      // Nothing is squeezed: the top bar stays one line, buttons at most two lines, task titles readable.
      const bar = document.querySelector('.topbar');
      if (bar && bar.getBoundingClientRect().height > 72) problems.push(`top bar wraps (${Math.round(bar.getBoundingClientRect().height)} px high)`);
      for (const b of document.querySelectorAll('button')) {
        const r = b.getBoundingClientRect();
        const line = parseFloat(getComputedStyle(b).fontSize) * 1.5;
        // At most two lines, and a one-word label never breaks.
        const text = (b.textContent ?? '').trim();
        if (!text) continue; // an icon button (named by aria-label) has no label to wrap
        const oneWord = !/\s/.test(text);
        if (r.height > 0 && r.height > (oneWord ? 1.4 : 2.6) * line + 16) problems.push(`button squeezed: ${describe(b)} (${Math.round(r.width)}×${Math.round(r.height)})`);
      }
      for (const t of document.querySelectorAll('.list .title')) {
        const r = t.getBoundingClientRect();
        if (r.width > 0 && r.width < 6 * parseFloat(getComputedStyle(t).fontSize)) problems.push(`title squeezed: ${describe(t)} (${Math.round(r.width)} px wide)`);
      }
      // Accessibility basics: every control has a name, and text contrast meets WCAG AA (4.5:1).
      const visible = (el: Element) => (el as HTMLElement).offsetParent !== null || getComputedStyle(el).position === 'fixed';
      for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
        if (!visible(el)) continue;
        const id = el.getAttribute('id');
        const named = el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') || el.closest('label') || (id && document.querySelector(`label[for="${CSS.escape(id)}"]`));
        if (!named) problems.push(`unlabelled control: ${describe(el)}`);
      }
      for (const b of document.querySelectorAll('button, a[href]')) {
        if (visible(b) && !(b.textContent ?? '').trim() && !b.getAttribute('aria-label')) problems.push(`control without a name: ${describe(b)}`);
      }
      const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
      const lum = ([r, g, b]: number[]) => {
        const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
      };
      const background = (el: Element | null): number[] => {
        for (let e = el; e; e = e.parentElement) {
          const c = rgb(getComputedStyle(e).backgroundColor);
          if (c.length === 3 || (c.length === 4 && c[3]! > 0.5)) return c.slice(0, 3);
          if (getComputedStyle(e).backgroundImage !== 'none') return [];
        }
        return rgb(getComputedStyle(document.documentElement).backgroundColor).slice(0, 3);
      };
      for (const el of document.querySelectorAll('p, li, label, a, button, .badge, .muted, .small, h1, h2, h3, th, td, dd, dt')) {
        if (!visible(el) || !(el.textContent ?? '').trim() || (el as HTMLButtonElement).disabled) continue;
        const bg = background(el);
        if (bg.length !== 3) continue; // over a gradient: not measurable this way
        const fg = rgb(getComputedStyle(el).color).slice(0, 3);
        const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
        const ratio = (a! + 0.05) / (b! + 0.05);
        if (ratio < 4.5) problems.push(`low contrast ${ratio.toFixed(2)}: ${describe(el)}`);
      }
      // The sticky top bar sits above the content, and at the end of the page the content ends above a fixed bottom bar.
      const top = document.querySelector('.topbar');
      const main = document.querySelector('#main');
      if (top && main && window.scrollY === 0 && hit(rect(top), rect(main))) problems.push('top bar overlaps the main content');
      const nav = document.querySelector('.primary-nav');
      if (nav && main && getComputedStyle(nav).position === 'fixed') {
        window.scrollTo(0, doc.scrollHeight);
        const navTop = nav.getBoundingClientRect().top;
        const mainBottom = main.getBoundingClientRect().bottom;
        if (mainBottom > navTop + 0.5) problems.push(`content ends under the bottom navigation (${mainBottom} > ${navTop})`);
        window.scrollTo(0, 0);
      }
      return problems;
    }, groups);
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${size.width}.png`), fullPage: true });
    if (report.length > 0) throw new Error(`layout check failed for ${name} @${label} (${size.width} px):\n  ${report.join('\n  ')}`);
  }
  await page.setViewportSize(VIEWPORTS.desktop);
}

/** The whole system in-process (every service, real PostgreSQL) behind the gateway that serves the built UI, with a real OpenID provider. */
export interface UiSystem {
  url: string;
  config: Config;
  system: RunningSystem;
  /** restart every service with changed configuration (same database, same URL) */
  restart(overrides: Partial<Config>): Promise<void>;
  stop(): Promise<void>;
}

export async function startUiSystem(overrides: Record<string, string> = {}): Promise<UiSystem> {
  const port = await freePort();
  // `localhost` is a secure context (WebAuthn, service workers) and the WebAuthn RP id.
  const url = `http://localhost:${port}`;
  const op = await startOp(url);
  let config = await testSystemConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_APP_URL: url,
    AUTH_CALLBACK_URL: url,
    OIDC_ISSUER: op.issuer,
    OIDC_CLIENT_ID,
    OIDC_CLIENT_SECRET,
    TOTP_ENCRYPTION_KEY: 'b'.repeat(64),
    ...overrides,
  });
  const ui: UiSystem = {
    url,
    config,
    system: await startSystem(config),
    async restart(changes) {
      await ui.system.stop();
      config = { ...config, ...changes };
      ui.config = config;
      ui.system = await startSystem(config);
    },
    async stop() {
      await ui.system.stop();
      await op.stop();
    },
  };
  return ui;
}

/** Sign in through the UI: the OIDC button, the provider's (headless) login, back to the app at `expectPath`. */
export async function signIn(page: Page, url: string, email: string, expectPath = '/dashboard'): Promise<void> {
  await page.goto(`${url}/login?login_hint=${encodeURIComponent(email)}`);
  await page.locator('button[data-provider="oidc"]:not([disabled])').click();
  await page.waitForURL(`${url}${expectPath}`);
}

/**
 * Set up an authenticator app as a person does, within `scope` (a page, or the TOTP section of
 * Settings → Security): read the key shown, enter a code from it, acknowledge the backup codes.
 * Returns the key.
 */
export async function setUpAuthenticator(scope: Page | Locator): Promise<string> {
  await scope.getByRole('button', { name: 'Set up an authenticator app' }).click();
  const secret = (await scope.getByTestId('totp-secret').textContent())!.trim();
  await scope.getByLabel('Code from the app').fill(totpCode(secret));
  await scope.getByRole('button', { name: 'Turn on' }).click();
  await scope.getByTestId('backup-codes').waitFor();
  await scope.getByRole('button', { name: 'I saved my backup codes' }).click();
  return secret;
}

/** Turn on TOTP in Settings → Security, as a person with an authenticator app does; returns the secret. */
export async function enrolTotp(page: Page): Promise<string> {
  await page.goto('/settings/security');
  const totp = page.getByTestId('totp-section');
  const secret = await setUpAuthenticator(totp);
  await totp.getByText('backup codes left').waitFor();
  return secret;
}

/** A task made through the API (the setting for a flow, not the flow); returns its id. */
export async function createTask(page: Page, data: Record<string, unknown>): Promise<string> {
  const res = await page.request.post('/api/tasks', { data });
  expect(res.status()).toBe(201);
  return ((await res.json()) as { task: { id: string } }).task.id;
}

/** A CDP virtual authenticator (platform, resident keys, user verified) that answers every WebAuthn prompt. */
export async function virtualAuthenticator(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
}

/** expect.poll with room for a loaded CI machine (the default gives up after one second). */
export const eventually = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 20_000, interval: 100 });

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
export const SCHEMES = ['light', 'dark'] as const;

/**
 * axe-core (WCAG 2.x A/AA and best practice) on the page as it is now, at 390 and 1280 px, in light
 * and dark: the serious and critical violations, one line each. The page's context needs
 * `bypassCSP: true` (the CSP forbids the injected script). Screenshots: `a11y-NAME-SCHEME-WIDTH.png`.
 */
export async function axeViolations(page: Page, name: string): Promise<string[]> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const found: string[] = [];
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const size of Object.values(VIEWPORTS)) {
      await page.setViewportSize(size);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE });
      const violations = await page.evaluate(async () => {
        const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[]; failureSummary?: string }[] }[] }> } }).axe;
        const r = await axe.run(document, { resultTypes: ['violations'] });
        return r.violations
          .filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 4).map((n) => `${n.target.join(' ')}${n.failureSummary ? ` [${n.failureSummary.split('\n').slice(1).join(' ').trim().slice(0, 160)}]` : ''}`).join('; ')}`);
      });
      await page.screenshot({ path: join(SCREENSHOTS, `a11y-${name}-${scheme}-${size.width}.png`), fullPage: true });
      for (const v of violations) found.push(`${name} ${scheme} ${size.width}px: ${v}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(VIEWPORTS.desktop);
  return found;
}
