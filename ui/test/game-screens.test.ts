import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { checkLayout, chromiumSuite, eventually, hasChromium, signIn, VIEWPORTS } from './support.ts';

/**
 * Wishlist, energy check-in and vacation mode in Chromium against the whole system, at phone and
 * desktop widths, along the click path a person takes (no reloads between steps).
 */

const suite = chromiumSuite('game');

async function signedIn(email: string, viewport: { width: number; height: number }): Promise<Page> {
  const page = await suite.newPage(viewport, { serviceWorkers: 'allow' });
  await signIn(page, suite.url, email);
  return page;
}

describe.skipIf(!hasChromium)('game screens in headless Chromium', () => {
  for (const [name, viewport] of Object.entries(VIEWPORTS)) {
    it(`energy check-in, wishlist purchase and vacation mode (${name}, ${viewport.width} px)`, async () => {
      const page = await signedIn(`gamer-${name}@example.test`, viewport);

      // Energy: one tap on the dashboard, the choice shows as pressed and the streak starts.
      const energy = page.getByTestId('energy-checkin');
      await energy.getByRole('button', { name: 'Medium' }).click();
      await eventually(() => energy.getByRole('button', { name: 'Medium' }).getAttribute('aria-pressed')).toBe('true');
      await energy.getByText('1-day check-in streak').waitFor();
      await energy.getByRole('button', { name: 'High' }).click();
      await eventually(() => energy.getByRole('button', { name: 'High' }).getAttribute('aria-pressed')).toBe('true');
      expect(await energy.getByRole('button', { name: 'Medium' }).getAttribute('aria-pressed')).toBe('false');

      // Earn coins: complete a task worth 10 through the API the page itself uses.
      const created = await page.request.post('/api/tasks', { data: { title: 'Earn coins', coinValue: 10 } });
      const task = ((await created.json()) as { task: { id: string } }).task;
      expect((await page.request.post(`/api/tasks/${task.id}/complete`, { data: {} })).status()).toBe(200);

      // Wishlist: reached from the coins on the dashboard; add, buy, discard.
      await page.getByTestId('streak-card').getByRole('link', { name: 'wishlist' }).click();
      await page.waitForURL(`${suite.url}/wishlist`);
      await page.getByLabel('Wish', { exact: true }).fill('Cinema ticket');
      await page.getByLabel('Price (coins)').fill('8');
      await page.getByRole('button', { name: 'Add' }).click();
      await page.getByLabel('Wish', { exact: true }).fill('Sports car');
      await page.getByLabel('Price (coins)').fill('100000');
      await page.getByRole('button', { name: 'Add' }).click();
      await eventually(() => page.getByTestId('wish').count()).toBe(2);
      // Too expensive: the Buy button is disabled and says how far off it is.
      expect(await page.getByRole('button', { name: 'Buy Sports car' }).isDisabled()).toBe(true);
      await page.getByText(/to go/).waitFor();
      await checkLayout(page, `wishlist-${name}`);
      await page.getByRole('button', { name: 'Buy Cinema ticket' }).click();
      await page.getByTestId('wish-history').filter({ hasText: 'Bought “Cinema ticket”' }).waitFor();
      await page.getByRole('button', { name: 'Discard Sports car' }).click();
      await page.getByTestId('wish-history').filter({ hasText: 'Discarded “Sports car”' }).waitFor();
      await page.getByText('Nothing on your wishlist yet').waitFor();

      // Vacation: start without an end date, see it active, end it.
      await page.goto('/settings/vacation');
      const vacation = page.getByTestId('vacation');
      await vacation.getByRole('button', { name: 'Start vacation' }).click();
      await vacation.getByTestId('vacation-status').getByText(/On vacation since/).waitFor();
      await checkLayout(page, `vacation-${name}`);
      await vacation.getByRole('button', { name: 'End vacation' }).click();
      await vacation.getByRole('button', { name: 'Start vacation' }).waitFor();
      const state = (await (await page.request.get('/api/settings/vacation-mode')).json()) as { active: boolean };
      expect(state.active).toBe(false);
      await page.context().close();
    });
  }
});
