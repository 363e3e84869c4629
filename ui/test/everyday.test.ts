import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { checkLayout, chromiumSuite, controlsUnderToasts, createTask, eventually, hasChromium, setUpAuthenticator, signIn, SIZES } from './support.ts';

/**
 * Issue 24, second pass: what a person meets every day that the first pass left short. Quick add
 * leads Today and highlights natural dates in the field itself; rows show notes, estimate and topic
 * colour; toasts never cover a control; the forced second-factor setup leads straight into a working
 * app; the first screen comes compressed and cached. Each along the real click path (no reloads
 * between steps) at 390 and 1280 px, against the whole system. Screenshots: everyday-*.
 */

const suite = chromiumSuite('everyday', { locale: 'en-GB' });
const { newPage, shot } = suite;

interface ApiTask {
  id: string;
  title: string;
  type: string;
  dueDate: string | null;
  recurrenceType: string | null;
  recurrenceWeekdays: number[] | null;
  recurrenceWeekOfMonth: number | null;
}
const tasks = async (page: Page) => ((await (await page.request.get('/api/tasks?limit=100')).json()) as { tasks: ApiTask[] }).tasks;

/** Today in the person's timezone (the profile's), plus `days`, as YYYY-MM-DD. */
async function appDay(page: Page, days = 0): Promise<string> {
  const { timezone } = (await (await page.request.get('/api/settings/timezone')).json()) as { timezone: string };
  const today = new Intl.DateTimeFormat('en-CA', { timeZone: timezone }).format(new Date());
  const d = new Date(`${today}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** Where a highlighted part sits against the text typed in quick add, measured with the field's own font. */
function highlightOf(page: Page, part: string, before: string) {
  return page.evaluate(
    ([part, before]) => {
      const input = document.getElementById('quick-add') as HTMLInputElement;
      const cs = getComputedStyle(input);
      const ctx = document.createElement('canvas').getContext('2d')!;
      ctx.font = cs.font;
      const mark = [...document.querySelectorAll('[data-testid="quick-add-highlights"] mark')].find((m) => m.textContent === part);
      if (!mark) return null;
      const field = input.getBoundingClientRect();
      const box = mark.getBoundingClientRect();
      const textStart = field.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft) - input.scrollLeft;
      return {
        // how far the mark is from where the words are drawn, and how much wider or narrower
        offset: box.left - textStart - ctx.measureText(before).width,
        widthDiff: box.width - ctx.measureText(part).width,
        inField: box.left >= field.left - 0.5 && box.right <= field.right + 0.5 && box.top >= field.top && box.bottom <= field.bottom,
        scrolled: input.scrollLeft,
      };
    },
    [part, before] as const,
  );
}

describe.skipIf(!hasChromium)('everyday flows (issue 24, second pass) in Chromium, no reloads between steps', () => {
  it.each(SIZES)('Today leads with quick add; "tomorrow 9am", "next fri" and "every 2nd tue" are highlighted in the field as typed and saved as dates and schedules (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `natural-${label}@example.test`);
    // Quick add is the first thing on Today, in the first screenful even on a phone.
    const first = page.locator('#main .stack > *').first();
    await first.getByLabel('Quick add a task').waitFor();
    expect(await first.getAttribute('data-testid')).toBe('today-quick-add');
    expect((await first.boundingBox())!.y + (await first.boundingBox())!.height).toBeLessThan(size.height);

    // `n` from anywhere focuses it.
    await page.locator('#main h1').click();
    await page.keyboard.press('n');
    await eventually(() => page.evaluate(() => document.activeElement?.id)).toBe('quick-add');
    await page.keyboard.type('Dentist next fri 9am');
    // Highlighted where they were typed: the marks sit on the words, inside the field.
    for (const [part, before] of [['next fri 9am', 'Dentist ']] as const) {
      await eventually(() => highlightOf(page, part, before)).not.toBeNull();
      const h = (await highlightOf(page, part, before))!;
      expect(Math.abs(h.offset), `${part} offset`).toBeLessThan(1.5);
      expect(Math.abs(h.widthDiff), `${part} width`).toBeLessThan(1.5);
      expect(h.inField).toBe(true);
    }
    const nextFri = await (async () => {
      for (let i = 1; i <= 7; i++) {
        const d = await appDay(page, i);
        if (new Date(`${d}T00:00:00Z`).getUTCDay() === 5) return d;
      }
      throw new Error('no Friday in a week');
    })();
    const preview = page.getByTestId('quick-add-preview');
    await preview.getByText(/^Due (Fri|Friday)/).waitFor();
    await shot(page, 'highlight-next-fri');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Dentist"' }).waitFor();
    await eventually(async () => (await tasks(page)).find((t) => t.title === 'Dentist')).toMatchObject({ dueDate: nextFri, dueTime: '09:00' });

    await page.keyboard.type('Call the bank tomorrow 9am');
    await eventually(() => highlightOf(page, 'tomorrow 9am', 'Call the bank ')).not.toBeNull();
    expect(Math.abs((await highlightOf(page, 'tomorrow 9am', 'Call the bank '))!.offset)).toBeLessThan(1.5);
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Call the bank"' }).waitFor();
    const tomorrow = await appDay(page, 1);
    await eventually(async () => (await tasks(page)).find((t) => t.title === 'Call the bank')).toMatchObject({ dueDate: tomorrow, dueTime: '09:00' });

    await page.keyboard.type('Standup every 2nd tue');
    await eventually(() => highlightOf(page, 'every 2nd tue', 'Standup ')).not.toBeNull();
    expect(Math.abs((await highlightOf(page, 'every 2nd tue', 'Standup '))!.offset)).toBeLessThan(1.5);
    await preview.getByText('Every 2nd Tuesday of the month').waitFor();
    await shot(page, 'highlight-every-2nd-tue');
    await page.keyboard.press('Enter');
    await page.locator('.toast').filter({ hasText: 'Added "Standup"' }).waitFor();
    await eventually(async () => (await tasks(page)).find((t) => t.title === 'Standup')).toMatchObject({ type: 'RECURRING', recurrenceType: 'NTH_WEEKDAY', recurrenceWeekOfMonth: 2, recurrenceWeekdays: [1] });

    // A line longer than the field: the highlights scroll with the text and stay on their words.
    const longLine = 'Ask the landlord about the broken heating in the back bedroom, the dripping tap in the kitchen and the loose tile on the roof ';
    await page.keyboard.type(`${longLine}tomorrow`);
    await eventually(async () => (await highlightOf(page, 'tomorrow', longLine))?.scrolled ?? 0).toBeGreaterThan(0);
    const long = (await highlightOf(page, 'tomorrow', longLine))!;
    expect(Math.abs(long.offset)).toBeLessThan(1.5);
    expect(long.inField).toBe(true);
    await shot(page, 'highlight-long-line');
  });

  it.each(SIZES)('a row shows at a glance that the task has notes, how long it takes and its topic colour (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `indicators-${label}@example.test`);
    const nav = page.getByRole('navigation', { name: 'Main' });
    // A topic with its own colour, made on the Topics screen.
    await nav.getByRole('link', { name: 'Topics' }).click();
    await page.getByRole('button', { name: 'New topic' }).click();
    const form = page.getByRole('form', { name: 'New topic' });
    await form.getByLabel('Topic name').fill('Garden');
    await form.getByLabel('Colour').fill('#16a34a');
    await form.getByRole('button', { name: 'Create topic' }).click();
    await page.getByRole('link', { name: /Garden/ }).waitFor();
    const garden = ((await (await page.request.get('/api/topics')).json()) as { topics: { id: string; title: string; color: string }[] }).topics.find((t) => t.title === 'Garden')!;
    expect(garden.color).toBe('#16a34a');
    await createTask(page, { title: 'Prune the roses', notes: 'The climbing ones by the shed first', estimatedMinutes: 90, topicId: garden.id, dueDate: await appDay(page) });
    await createTask(page, { title: 'Buy stamps', dueDate: await appDay(page) });
    await nav.getByRole('link', { name: 'Tasks' }).click();
    for (const screen of ['Tasks', 'Today'] as const) {
      if (screen === 'Today') {
        await nav.getByRole('link', { name: 'Today' }).click();
        // The router keeps the old screen up until the new one is ready: its rows must be gone first.
        await page.getByRole('heading', { level: 1, name: 'Tasks' }).waitFor({ state: 'detached' });
      }
      const row = page.getByTestId('task-row').filter({ hasText: 'Prune the roses' });
      await row.waitFor();
      // Notes: an icon, named for screen readers, the start of the notes on hover.
      const notes = row.getByTestId('has-notes');
      expect(await notes.textContent()).toBe('Has notes');
      expect(await notes.getAttribute('title')).toBe('The climbing ones by the shed first');
      expect((await row.getByTestId('estimate').textContent())?.trim()).toBe('Estimate: 1 h 30 min');
      // The topic's own colour beside its name.
      const topic = row.getByTestId('topic-tag');
      expect(await topic.textContent()).toBe('Garden');
      expect(await topic.locator('.topic-dot').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(22, 163, 74)');
      // A task without any of it shows none of it.
      const plain = page.getByTestId('task-row').filter({ hasText: 'Buy stamps' });
      expect(await plain.getByTestId('has-notes').count()).toBe(0);
      expect(await plain.getByTestId('estimate').count()).toBe(0);
      expect(await plain.getByTestId('topic-tag').count()).toBe(0);
      await shot(page, `indicators-${screen.toLowerCase()}`);
    }
    // Still one line of actions per row and nothing squeezed (both widths; once is enough).
    if (size.width > 760) await checkLayout(page, 'everyday-indicators');
  });

  it.each(SIZES)('toasts never cover a control: not the tab bar or the floating add button, not an open menu, not the task panel or sheet, and the page ends above them (%s)', async (label, size) => {
    const page = await newPage(size);
    await signIn(page, suite.url, `toasts-${label}@example.test`);
    for (let i = 1; i <= 14; i++) await createTask(page, { title: `Chore ${String(i).padStart(2, '0')}` });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await page.getByTestId('task-row').nth(13).waitFor();

    // A completion toast, with the achievement news beside it; the pointer on the toast keeps it up.
    await page.getByRole('checkbox', { name: 'Complete "Chore 01"' }).click();
    const done = page.locator('.toast').filter({ hasText: 'Completed "Chore 01"' });
    await done.hover();
    await page.locator('.toast').filter({ hasText: 'Achievement unlocked' }).waitFor();
    expect(await controlsUnderToasts(page)).toEqual([]);
    await shot(page, 'toasts-list');

    // A menu opened low on the screen, while the toasts are up: its items are on top. (From the
    // keyboard, so the pointer stays on the toast and keeps it up.)
    const last = page.getByRole('button', { name: 'Actions for "Chore 14"' });
    await last.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('menu').waitFor();
    expect(await controlsUnderToasts(page)).toEqual([]);
    await shot(page, 'toasts-menu');
    await page.keyboard.press('Escape');

    // The task panel (sheet on a phone) with a toast raised from its row meanwhile.
    const menuButton = page.getByRole('button', { name: 'Actions for "Chore 10"' });
    await menuButton.click();
    await page.getByRole('menuitem', { name: 'Edit', exact: true }).click();
    const panel = page.getByRole('dialog', { name: 'Edit task' });
    await panel.waitFor();
    await menuButton.click();
    await page.getByRole('group', { name: 'Priority' }).getByRole('menuitem', { name: 'High' }).click();
    const changed = page.locator('.toast').filter({ hasText: 'Priority: High' });
    // The focus on its Undo keeps it up (and the panel stays open).
    await changed.getByRole('button', { name: 'Undo' }).focus();
    expect(await panel.isVisible()).toBe(true);
    expect(await controlsUnderToasts(page)).toEqual([]);
    // Its Save button in particular is in the clear.
    const save = (await panel.getByRole('button', { name: 'Save' }).boundingBox())!;
    for (const t of await page.locator('.toast').all()) {
      const b = (await t.boundingBox())!;
      expect(b.x + b.width <= save.x || save.x + save.width <= b.x || b.y + b.height <= save.y || save.y + save.height <= b.y).toBe(true);
    }
    await shot(page, 'toasts-panel');
    // Saving the panel afterwards keeps that change: it sends only what was edited in it.
    await panel.getByLabel('Title').fill('Chore 10, the big one');
    await panel.getByRole('button', { name: 'Save' }).click();
    await panel.waitFor({ state: 'detached' });
    const saved = (await tasks(page)).find((t) => t.title === 'Chore 10, the big one') as unknown as { priority: string } | undefined;
    expect(saved?.priority).toBe('HIGH');
  });

  it.each(SIZES)('after forced second-factor setup (REQUIRE_2FA) the app works at once, no reload (%s)', async (label, size) => {
    if (label === SIZES[0]![0]) await suite.restart({ REQUIRE_2FA: true });
    const page = await newPage(size);
    await signIn(page, suite.url, `forced-${label}@example.test`, '/setup/2fa');
    await page.getByText('requires a second factor').waitFor();
    await setUpAuthenticator(page);
    await page.waitForURL(`${suite.url}/dashboard`);
    // Straight into a working app: navigation, figures, a task added and listed, no error screen.
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    await page.getByTestId('streak-current').waitFor();
    await page.getByLabel('Quick add a task').fill('First task after setup');
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tasks' }).click();
    await page.getByTestId('task-row').filter({ hasText: 'First task after setup' }).waitFor();
    expect(await page.getByText('Something went wrong').count()).toBe(0);
    await shot(page, 'after-forced-setup');
  });

  it.each(SIZES)('the first screen comes precompressed (brotli) and its hashed files are cached as immutable (%s)', async (_label, size) => {
    const page = await newPage(size);
    const assets: { url: string; encoding?: string; cache?: string }[] = [];
    let html: { encoding?: string; cache?: string } | undefined;
    page.on('response', (r) => {
      const h = r.headers();
      if (/\/assets\/.+\.(js|css)$/.test(r.url())) assets.push({ url: r.url(), encoding: h['content-encoding'], cache: h['cache-control'] });
      if (r.request().resourceType() === 'document') html = { encoding: h['content-encoding'], cache: h['cache-control'] };
    });
    await page.goto('/login');
    await page.locator('button[data-provider]').first().waitFor();
    expect(assets.length).toBeGreaterThan(1);
    for (const a of assets) expect(a, a.url).toMatchObject({ encoding: 'br', cache: 'public, max-age=31536000, immutable' });
    expect(html).toMatchObject({ encoding: 'br', cache: 'no-cache' });
  });
});
