import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/runtime/src/index.ts';
import { until } from '../../tools/testenv/wait.ts';
import { enrolTotp, ensureUiBuilt, hasChromium, launchChromium } from './support.ts';

/**
 * Issue 15's acceptance: a newcomer runs `npm start` exactly as the README says (a fresh data
 * folder, nothing configured but the port), opens the app in Chromium and uses every feature through
 * the UI, signing in with the development provider. Prints the wall time from process start to the
 * first task created (a figure, not an assertion).
 */

const ROOT = new URL('../..', import.meta.url).pathname;
/**
 * A loopback address (the discard port) that is never contacted: the webhook listens only to
 * task.deleted, and nothing is deleted after. The form refuses loopback addresses unless
 * OUTBOUND_ALLOW_LIST allows them, so the start below sets that one variable besides the port.
 */
const NEVER_CONTACTED_WEBHOOK = 'http://127.0.0.1:9/never-contacted';

let proc: ChildProcess;
let output = '';
let startedAt = 0;
let url: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!hasChromium) return;
  await ensureUiBuilt();
  const port = await freePort();
  url = `http://localhost:${port}`;
  // Only PORT is set (and the allow list for the test's loopback webhook); DATA_DIR just points the
  // default `.data` folder at a fresh place, as a fresh clone has.
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), PORT: String(port), OUTBOUND_ALLOW_LIST: '127.0.0.1', DATA_DIR: mkdtempSync(join(tmpdir(), 'first-run-')) };
  startedAt = Date.now();
  proc = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await until(() => /Task Service is up/.test(output) || proc.exitCode !== null, 'the start line', 180_000);
  if (proc.exitCode !== null) throw new Error(`npm start exited ${proc.exitCode}:\n${output}`);
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: url })).newPage();
  page.on('dialog', (d) => void d.accept());
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (proc && proc.exitCode === null) {
    const exited = new Promise((r) => proc.once('exit', r));
    process.kill(-proc.pid!, 'SIGTERM'); // npm, the bootstrap and the server share one process group
    await exited;
  }
});

describe.skipIf(!hasChromium)('first run: `npm start` with nothing configured, used end to end in Chromium', () => {
  it('says where to open the app and how to sign in, with the port it listens on', () => {
    const startLine = output.split('\n').filter((l) => l.includes('Task Service is up')).at(-1)!;
    expect(startLine).toContain(url);
    expect(startLine).toContain('Development sign-in');
  });

  it('signs in through the development provider by clicking, on the ordinary OIDC path', async () => {
    await page.goto('/');
    await page.waitForURL(/\/login/);
    await page.getByTestId('dev-signin-note').waitFor();
    await page.locator('button[data-provider="dev"]:not([disabled])').click();
    // The provider's own page: a name and an e-mail address, clearly marked as development only.
    await page.getByRole('heading', { name: 'Development sign-in' }).waitFor();
    await page.getByLabel('Name').fill('Nova Newcomer');
    await page.getByLabel('E-mail').fill('nova@first-run.test');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${url}/dashboard`);
    const me = (await (await page.request.get('/api/auth/me')).json()) as { email: string; name: string };
    expect(me).toMatchObject({ email: 'nova@first-run.test', name: 'Nova Newcomer' });
  });

  it('creates a first task in the setup and sees it as the daily quest', async () => {
    // The dashboard's "Take the two-minute setup" hint needs a reload after sign-in (issue 24.1), so go there directly.
    await page.goto('/onboarding');
    await page.getByRole('button', { name: /^Use / }).click();
    await page.getByLabel('What do you want to get done?').fill('Water the plants');
    await page.getByRole('button', { name: 'Add and continue' }).click();
    await page.getByRole('heading', { name: "You're set" }).waitFor();
    const tasks = (await (await page.request.get('/api/tasks')).json()) as { tasks: { title: string }[] };
    expect(tasks.tasks.map((t) => t.title)).toContain('Water the plants');
    console.log(`[measured] npm start → first task created: ${((Date.now() - startedAt) / 1000).toFixed(1)} s wall time`);

    await page.getByRole('button', { name: 'Go to today' }).click();
    const quest = page.getByTestId('daily-quest');
    await quest.getByTestId('quest-title').filter({ hasText: 'Water the plants' }).waitFor();
  });

  it('creates a task with quick add and completes it', async () => {
    await page.goto('/tasks');
    const quick = page.getByLabel('Quick add a task');
    await quick.fill('Call the plumber');
    await quick.press('Enter');
    const row = page.getByTestId('task-row').filter({ hasText: 'Call the plumber' });
    await row.waitFor();
    const id = (await row.getAttribute('data-task-id'))!;
    // click, not check(): the box is relabelled "Reopen …" once the completion is saved, so check() could no longer find it to verify
    await row.getByRole('checkbox', { name: /Complete "Call the plumber"/ }).click();
    await page.locator('.toast').filter({ hasText: 'Completed "Call the plumber"' }).waitFor();
    await until(async () => ((await (await page.request.get(`/api/tasks/${id}`)).json()) as { task: { completedAt: string | null } }).task.completedAt, 'the task completed');
  });

  it('enables TOTP (the generated TOTP_ENCRYPTION_KEY makes it work)', async () => {
    await enrolTotp(page);
    expect(((await (await page.request.get('/api/auth/2fa/status')).json()) as { totpEnabled: boolean }).totpEnabled).toBe(true);
  });

  it('saves a Telegram channel (its bot token is stored encrypted)', async () => {
    await page.goto('/settings/notifications');
    const card = page.getByTestId('channel-telegram');
    await card.getByRole('button', { name: 'Set up' }).click();
    await card.getByLabel('Bot token').fill('123456:first-run-bot-token-for-tests');
    await card.getByLabel('Chat id').fill('4242');
    await card.getByRole('button', { name: 'Save' }).click();
    await card.getByText('on', { exact: true }).waitFor();
    const { channels } = (await (await page.request.get('/api/settings/notification-channels')).json()) as { channels: { type: string; enabled: boolean; config: Record<string, unknown> | null }[] };
    expect(channels.find((c) => c.type === 'telegram')).toMatchObject({ enabled: true, config: { chatId: '4242', hasBotToken: true } });
    // Removed again, so no reminder ever tries the real Telegram API from this test. ("Turn off"
    // answers 400 for a Telegram channel: the UI sends back `hasBotToken`; reported to the ui area.)
    await card.getByRole('button', { name: 'Remove' }).click();
    await page.getByTestId('confirm-dialog').getByRole('button', { name: 'Remove' }).click();
    await card.getByText('not set up', { exact: true }).waitFor();
  });

  it('saves a webhook with a signing secret', async () => {
    await page.goto('/settings/integrations');
    const form = page.getByTestId('webhook-form');
    await form.getByLabel('Endpoint URL').fill(NEVER_CONTACTED_WEBHOOK);
    await form.getByLabel('Signing secret (optional)').fill('a-first-run-secret');
    await form.getByRole('checkbox', { name: 'task.deleted' }).check();
    await form.getByRole('button', { name: 'Add webhook' }).click();
    const endpoint = page.getByTestId('webhook-endpoint').filter({ hasText: NEVER_CONTACTED_WEBHOOK });
    await endpoint.getByText('signed').waitFor();
    const { webhooks } = (await (await page.request.get('/api/settings/webhooks')).json()) as { webhooks: { hasSecret: boolean }[] };
    expect(webhooks).toEqual([expect.objectContaining({ hasSecret: true })]);
  });
});
