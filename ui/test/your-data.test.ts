import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { userRowCounts } from '../../tools/user-data/tables.ts';
import { until } from '../../tools/testenv/index.ts';
import { chromiumSuite, createTask, enrolTotp, hasChromium, signIn, totpCode } from './support.ts';

/**
 * Settings → Your data along the real click path in Chromium: the JSON export downloads (with its
 * progress) as the attachment the server names, and the account is deleted behind the typed
 * confirmation — at once after a fresh sign-in, and after confirming the second factor when the
 * sign-in is older than 10 minutes. Afterwards no row of the user is left in any table.
 */
const suite = chromiumSuite('your-data');
const desktop = { width: 1280, height: 800 };

async function userId(email: string): Promise<string> {
  const { rows } = await suite.system().pool.query<{ id: string }>('SELECT id FROM auth.users WHERE email = $1', [email]);
  return rows[0]!.id;
}

describe.skipIf(!hasChromium)('Settings → Your data in Chromium', () => {
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
