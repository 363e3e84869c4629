import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { userRowCounts } from '../../tools/user-data/tables.ts';
import { until } from '../../tools/testenv/index.ts';
import { chromiumSuite, createTask, enrolTotp, hasChromium, signIn, totpCode } from './support.ts';

/**
 * Settings → Your data along the real click path in Chromium: the JSON export downloads (with its
 * progress) as the attachment the server names, and the account is deleted behind the typed
 * confirmation — at once after a fresh sign-in, and after confirming the second factor when the
 * sign-in is older than 10 minutes. Afterwards no row of the user is left in any table. And the
 * import wizard: a bad file named, preview (nothing written yet), confirm, result, the same file again.
 */
const suite = chromiumSuite('your-data');
const desktop = { width: 1280, height: 800 };

async function userId(email: string): Promise<string> {
  const { rows } = await suite.system().pool.query<{ id: string }>('SELECT id FROM auth.users WHERE email = $1', [email]);
  return rows[0]!.id;
}

const SAMPLES = new URL('../../services/tasks/test/import-samples/', import.meta.url).pathname;

describe.skipIf(!hasChromium)('Settings → Your data in Chromium', () => {
  it('imports a Todoist CSV through the wizard: a bad file is named, then preview, confirm, result; the same file again adds nothing', async () => {
    const page = await suite.newPage(desktop);
    const email = 'arriving@example.test';
    await signIn(page, suite.url, email);
    const id = await userId(email);
    await page.goto('/settings/data');
    const wizard = page.getByTestId('import-wizard');

    // a file that cannot be read: the wizard names file, row and field, and nothing is written
    await wizard.getByLabel('File to import').setInputFiles(`${SAMPLES}bad-priority.csv`);
    await wizard.getByRole('button', { name: 'Preview' }).click();
    await expect.poll(() => wizard.getByTestId('import-error').textContent()).toMatch(/bad-priority\.csv.*row 3.*PRIORITY/s);
    expect((await userRowCounts(suite.system().pool, id))['tasks.tasks']).toBe(0);

    await wizard.getByLabel('File to import').setInputFiles(`${SAMPLES}Home [2203306141].csv`);
    await wizard.getByRole('button', { name: 'Preview' }).click();
    await wizard.getByTestId('import-format').getByText('Home [2203306141].csv').waitFor();
    const counts = wizard.getByTestId('import-counts');
    expect(await counts.getByRole('row', { name: /^Tasks/ }).getByRole('cell').first().textContent()).toBe('9');
    expect(await counts.getByRole('row', { name: /^Subtasks/ }).getByRole('cell').first().textContent()).toBe('2');
    await expect.poll(() => wizard.getByTestId('import-recurrences').textContent()).toContain('every monday');
    // nothing is written before the confirmation
    expect((await userRowCounts(suite.system().pool, id))['tasks.tasks']).toBe(0);
    await suite.shot(page, 'import-preview');

    await wizard.getByRole('button', { name: /^Import \d+ items$/ }).click();
    await expect.poll(() => wizard.getByTestId('import-result').textContent()).toMatch(/Tasks: 9 added.*Subtasks: 2 added/s);
    await suite.shot(page, 'import-result');
    await wizard.getByRole('link', { name: 'Go to your tasks' }).click();
    await page.waitForURL(`${suite.url}/tasks`);
    await page.getByText('Pay rent').first().waitFor();

    // the same file again: the preview says it is all here already, and the import button is off
    await page.goto('/settings/data');
    await wizard.getByLabel('File to import').setInputFiles(`${SAMPLES}Home [2203306141].csv`);
    await wizard.getByRole('button', { name: 'Preview' }).click();
    const nothing = wizard.getByRole('button', { name: 'Nothing new to import' });
    await nothing.waitFor();
    expect(await nothing.isDisabled()).toBe(true);
    expect((await userRowCounts(suite.system().pool, id))['tasks.tasks']).toBe(11);
  });

  it('downloads everything as JSON, then deletes the account behind the typed confirmation', async () => {
    const page = await suite.newPage(desktop);
    const email = 'leaving@example.test';
    await signIn(page, suite.url, email);
    await createTask(page, { title: 'Take me with you' });
    await page.goto('/settings/data');

    const downloading = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download everything (JSON)' }).click();
    const download = await downloading;
    expect(download.suggestedFilename()).toMatch(/^task-service-export-\d{4}-\d{2}-\d{2}\.json$/);
    const doc = JSON.parse(readFileSync((await download.path()), 'utf8')) as { format: string; tasks: { title: string }[] };
    expect(doc.format).toBe('task-service-export');
    expect(doc.tasks.map((t) => t.title)).toContain('Take me with you');
    await page.getByText(/^Saved task-service-export-/).waitFor();
    await suite.shot(page, 'exported');

    const id = await userId(email);
    const button = page.getByTestId('delete-button');
    await page.getByTestId('delete-confirm').fill('delete my acount');
    expect(await button.isDisabled()).toBe(true);
    await page.getByTestId('delete-confirm').fill('delete my account');
    await button.click();
    await page.waitForURL(`${suite.url}/login`);
    await until(async () => Object.values(await userRowCounts(suite.system().pool, id)).every((n) => n === 0), 'every row of the user gone', 30_000);
  });

  it('a sign-in older than 10 minutes is asked for a code from the authenticator first', async () => {
    const page = await suite.newPage(desktop);
    const email = 'careful@example.test';
    await signIn(page, suite.url, email);
    const secret = await enrolTotp(page);
    const id = await userId(email);
    await suite.system().pool.query(`UPDATE auth.sessions SET created_at = now() - interval '30 minutes', second_factor_verified_at = now() - interval '30 minutes' WHERE user_id = $1`, [id]);
    await page.goto('/settings/data');
    await page.getByTestId('delete-confirm').fill('delete my account');
    await page.getByTestId('delete-button').click();
    const reauth = page.getByTestId('delete-reauth');
    await reauth.waitFor();
    await suite.shot(page, 'reauth');
    expect(await userRowCounts(suite.system().pool, id)).toMatchObject({ 'auth.users': 1 });
    // the enrolment spent the current 30-second step (replay protection): the next one
    await reauth.getByLabel('Authenticator or backup code').fill(totpCode(secret, Date.now() + 30_000));
    await reauth.getByRole('button', { name: 'Confirm and delete' }).click();
    await page.waitForURL(`${suite.url}/login`);
    await until(async () => Object.values(await userRowCounts(suite.system().pool, id)).every((n) => n === 0), 'every row of the user gone', 30_000);
  });
});
