import { randomUUID } from 'node:crypto';
import { collectRemindersRpc, type CronJob, type ReminderDraft } from '@tasksvc/proto';
import { createMemoryBus, createPool, startService, type Pool, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testSystemConfig } from '../../../../tools/testenv/index.ts';
import { tasksService } from '../service.ts';
import { REPLY_BUDGET_BYTES } from './collect.ts';
import { localParts } from './domain/dates.ts';

/**
 * tasks.game.collectReminders against a real PostgreSQL: the due users of a bucket found through
 * the per-job due indexes, page by page (keyset over zone, local time, user id), with pages far
 * smaller than the set so that every boundary is crossed: inside a zone, between zones, and where
 * a page is cut short because its drafts are large. (cron-dispatch.test.ts covers the whole path.)
 */

const log = quietLogger();
const bus = createMemoryBus(log);
let pool: Pool;
let tasks: RunningService;

beforeAll(async () => {
  const config = await testSystemConfig();
  pool = createPool(config.DATABASE_URL, log);
  tasks = await startService(tasksService, { config, bus, pool, log });
});
afterAll(async () => {
  await tasks.stop();
  await bus.close();
  await pool.end();
});

const hhmm = (at: Date, tz: string) => {
  const p = localParts(at, tz);
  return `${String(p.hour).padStart(2, '0')}:${String(p.minute).padStart(2, '0')}`;
};

/** Profiles with the streak reminder at `time` in `tz` and a live streak (last activity the day before `at`). */
async function streakUsers(n: number, tz: string, time: string, at: Date, cols: Record<string, unknown> = {}): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  const yesterday = new Date(`${localParts(at, tz).date}T00:00:00Z`);
  yesterday.setUTCDate(yesterday.getUTCDate() - 1);
  const all: Record<string, unknown> = { streak_reminder_enabled: true, streak_reminder_time: time, streak_current: 2, streak_max: 2, streak_last_date: yesterday.toISOString().slice(0, 10), ...cols };
  const names = Object.keys(all);
  await pool.query(
    `INSERT INTO tasks.profiles (user_id, timezone, ${names.join(', ')}) SELECT u, $2, ${names.map((_, i) => `$${i + 3}`).join(', ')} FROM unnest($1::uuid[]) AS u`,
    [ids, tz, ...Object.values(all)],
  );
  return ids;
}

/** Every page of one job's collection for a bucket; each reply checked against its schema. */
async function allPages(job: CronJob, bucket: Date, limit: number) {
  const pages: { users: number; drafts: ReminderDraft[] }[] = [];
  let after: string | null = null;
  do {
    const page: { users: number; drafts: ReminderDraft[]; next: string | null } = await bus.request(collectRemindersRpc, { job, bucketStart: bucket.toISOString(), after, limit });
    pages.push(page);
    after = page.next;
    expect(pages.length).toBeLessThan(100);
  } while (after);
  return pages;
}

describe('collectReminders', () => {
  it('pages through the due users of many zones, each exactly once, leaving out the ones not due', async () => {
    // Saturday 2026-05-16 06:40 UTC: 08:40 in Berlin, 12:10 in Kolkata (UTC+5:30), 02:40 in New York, 18:40 in Auckland
    const T = new Date('2026-05-16T06:40:00Z');
    const zones = ['Europe/Berlin', 'Asia/Kolkata', 'America/New_York', 'Pacific/Auckland'];
    const due = new Set<string>();
    for (const [i, tz] of zones.entries()) {
      // 2–5 due users per zone at minutes spread over the bucket, so a page of 3 ends inside zones and between them
      for (const minute of [0, 2, 4].slice(0, 1 + (i % 3))) for (const id of await streakUsers(2, tz, hhmm(new Date(T.getTime() + minute * 60_000), tz), T)) due.add(id);
      // not due: the next bucket, the reminders off, on vacation, the morning briefing on (it replaces the streak reminder)
      await streakUsers(2, tz, hhmm(new Date(T.getTime() + 5 * 60_000), tz), T);
      await streakUsers(1, tz, hhmm(T, tz), T, { streak_reminder_enabled: false });
      await streakUsers(1, tz, hhmm(T, tz), T, { vacation_start_date: localParts(T, tz).date });
      await streakUsers(1, tz, hhmm(T, tz), T, { morning_briefing_enabled: true });
    }
    const pages = await allPages('streak-reminder', T, 3);
    const got = pages.flatMap((p) => p.drafts.map((d) => d.userId));
    expect(got.length).toBe(due.size);
    expect(new Set(got)).toEqual(due);
    expect(pages.reduce((a, p) => a + p.users, 0)).toBe(due.size);
    expect(pages.length).toBe(Math.ceil(due.size / 3) + (due.size % 3 === 0 ? 1 : 0));
  });

  it('finds reminders set inside a spring-forward gap once, at the jump, and those set at the last minutes of a day', async () => {
    // 2026-03-29 00:55 UTC: Berlin goes from 01:55 (CET) straight to 03:00 (CEST) at the bucket's end
    const T = new Date('2026-03-29T00:55:00Z');
    const inGap = await streakUsers(1, 'Europe/Berlin', '02:30', T);
    const atJump = await streakUsers(1, 'Europe/Berlin', '01:58', T);
    const after = await streakUsers(1, 'Europe/Berlin', '03:00', T); // the next bucket's
    // 23:55 in Cape Verde (UTC−1): the window ends at midnight
    const lastMinutes = await streakUsers(1, 'Atlantic/Cape_Verde', '23:59', T);
    const nextDay = await streakUsers(1, 'Atlantic/Cape_Verde', '00:00', T); // the next bucket's, on the next day
    const others = [...(await streakUsers(1, 'America/Sao_Paulo', '21:57', T)), ...(await streakUsers(1, 'Asia/Tokyo', '09:59', T))];
    const got = (await allPages('streak-reminder', T, 2)).flatMap((p) => p.drafts.map((d) => d.userId));
    expect(new Set(got)).toEqual(new Set([...inGap, ...atJump, ...lastMinutes, ...others]));
    expect(got).toHaveLength(5);
    expect(got).not.toContain(after[0]);
    expect(got).not.toContain(nextDay[0]);
  });

  it('cuts a page whose drafts would make a reply too large, and the next page goes on from there', async () => {
    // Sunday 2026-06-14 10:00 UTC in Lisbon (UTC+1): 11:00. Users whose due-today list is 10 long titles.
    const T = new Date('2026-06-14T10:00:00Z');
    const tz = 'Europe/Lisbon';
    const ids = Array.from({ length: 400 }, () => randomUUID());
    await pool.query(
      `INSERT INTO tasks.profiles (user_id, timezone, due_today_reminder_enabled, due_today_reminder_time) SELECT u, $2, true, $3 FROM unnest($1::uuid[]) AS u`,
      [ids, tz, hhmm(T, tz)],
    );
    await pool.query(
      `INSERT INTO tasks.tasks (user_id, title, type, due_date) SELECT u, repeat('é', 190) || i, 'ONE_TIME', $2::date FROM unnest($1::uuid[]) AS u CROSS JOIN generate_series(1, 12) AS i`,
      [ids, localParts(T, tz).date],
    );
    const pages = await allPages('due-today', T, 5_000);
    expect(pages.length).toBeGreaterThan(1);
    for (const p of pages) expect(Buffer.byteLength(JSON.stringify(p.drafts))).toBeLessThan(REPLY_BUDGET_BYTES);
    const got = pages.flatMap((p) => p.drafts.map((d) => d.userId));
    expect(got).toHaveLength(ids.length);
    expect(new Set(got)).toEqual(new Set(ids));
    expect(pages[0]!.drafts[0]).toMatchObject({ title: '12 tasks due today', tag: 'due-today' });
  });
});
