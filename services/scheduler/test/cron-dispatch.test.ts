import { randomUUID } from 'node:crypto';
import { CRON_JOBS, cronJobsRpc, cronRunRpc, notificationRequested, type CronRunSummary, type NotificationRequest } from '@tasksvc/proto';
import { createNatsBus, createPool, startService, type Bus, type Pool, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayService } from '../../gateway/src/index.ts';
import { tasksService } from '../../tasks/src/index.ts';
import { localParts } from '../../tasks/src/game/domain/dates.ts';
import { fileNats, quietLogger, serveTestIdentities, testSystemConfig } from '../../../tools/testenv/index.ts';
import { createSchedulerService } from '../src/service.ts';

/**
 * The cron dispatcher end to end: POST /api/cron → gateway → NATS → scheduler → tasks
 * (collectReminders) → PostgreSQL, and the notificationRequested events read back from JetStream.
 * Two scheduler replicas (each its own NATS connection and pool) share one crafted clock.
 */

const SECRET = 'c'.repeat(64);
// Sunday 2026-11-22 07:00 UTC: 08:00 in Berlin (CET), 21:00 Sunday in Kiritimati (UTC+14), 20:00 Saturday in Pago Pago (UTC−11).
const T = new Date('2026-11-22T07:00:00Z');
let clock = T;
const log = quietLogger();

const nats = fileNats();
let url: string;
let pool: Pool;
const buses: Bus[] = [];
const pools: Pool[] = [];
const running: RunningService[] = [];
let observer: Bus;
const received: NotificationRequest[] = [];

const berlin = randomUUID();
const kiritimati = randomUUID();
const pagoPago = randomUUID();
const later = randomUUID();
const caughtUp = randomUUID();
const tooLate = randomUUID();
const briefed = randomUUID();
const away = randomUUID();
// all three game reminders on, then one switched off through the settings API (issue 55, bug 11)
const noStreak = randomUUID();
const noReview = randomUUID();
const ours = new Set<string>([berlin, kiritimati, pagoPago, later, caughtUp, tooLate, briefed, away, noStreak, noReview]);

const hhmm = (at: Date, tz: string) => {
  const p = localParts(at, tz);
  return `${String(p.hour).padStart(2, '0')}:${String(p.minute).padStart(2, '0')}`;
};
const localDay = (at: Date, tz: string) => localParts(at, tz).date;

async function startReplica(config: Awaited<ReturnType<typeof testSystemConfig>>, services: Parameters<typeof startService>[0][]) {
  const bus = await createNatsBus({ servers: config.NATS_URL!, name: 'replica', log });
  const p = createPool(config.DATABASE_URL, log, { max: 10 });
  buses.push(bus);
  pools.push(p);
  for (const s of services) running.push(await startService(s, { config, bus, pool: p, log }));
}

async function seed() {
  const day = (tz: string, offset = 0) => {
    const d = new Date(`${localDay(T, tz)}T00:00:00Z`);
    d.setUTCDate(d.getUTCDate() + offset);
    return d.toISOString().slice(0, 10);
  };
  const B = 'Europe/Berlin';
  const K = 'Pacific/Kiritimati';
  const P = 'Pacific/Pago_Pago';
  const profile = (user: string, tz: string, cols: Record<string, unknown>) =>
    pool.query(`INSERT INTO tasks.profiles (user_id, timezone, ${Object.keys(cols).join(', ')}) VALUES ($1, $2, ${Object.keys(cols).map((_, i) => `$${i + 3}`).join(', ')})`, [user, tz, ...Object.values(cols)]);
  const at = hhmm(T, B);
  // Berlin: every per-task reminder plus quest, streak and (it is Sunday there) the weekly review at 08:00.
  await profile(berlin, B, {
    due_today_reminder_enabled: true, due_today_reminder_time: at,
    overdue_reminder_enabled: true, overdue_reminder_time: at,
    recurring_due_reminder_enabled: true, recurring_due_reminder_time: at,
    notification_enabled: true, notification_time: at, streak_reminder_enabled: true, streak_reminder_time: at, weekly_review_enabled: true, weekly_review_time: at,
    streak_current: 4, streak_max: 4, streak_last_date: day(B, -1),
  });
  await pool.query(
    `INSERT INTO tasks.tasks (user_id, title, type, due_date) VALUES ($1, 'due one', 'ONE_TIME', $2), ($1, 'due two', 'ONE_TIME', $2), ($1, 'late one', 'ONE_TIME', $3), ($1, 'ancient', 'ONE_TIME', $4)`,
    [berlin, day(B), day(B, -3), day(B, -40)],
  );
  await pool.query(
    `INSERT INTO tasks.tasks (user_id, title, type, recurrence_type, recurrence_interval, next_due_date, recurrence_anchor) VALUES ($1, 'water plants', 'RECURRING', 'INTERVAL', 2, $2, $2)`,
    [berlin, day(B)],
  );
  // Kiritimati: four recurring tasks due → one summary.
  await profile(kiritimati, K, { recurring_due_reminder_enabled: true, recurring_due_reminder_time: hhmm(T, K) });
  await pool.query(
    `INSERT INTO tasks.tasks (user_id, title, type, recurrence_type, recurrence_interval, next_due_date, recurrence_anchor)
     SELECT $1, 'habit ' || i, 'RECURRING', 'INTERVAL', 1, $2::date, $2::date FROM generate_series(1, 4) i`,
    [kiritimati, day(K)],
  );
  // Pago Pago: the morning briefing replaces its due-today reminder; sent even though nothing is due.
  await profile(pagoPago, P, { morning_briefing_enabled: true, morning_briefing_time: hhmm(T, P), due_today_reminder_enabled: true, due_today_reminder_time: hhmm(T, P) });
  // Berlin with the morning briefing on: it replaces the quest and streak reminders, not the weekly review.
  await profile(briefed, B, {
    morning_briefing_enabled: true, morning_briefing_time: at,
    notification_enabled: true, notification_time: at, streak_reminder_enabled: true, streak_reminder_time: at, weekly_review_enabled: true, weekly_review_time: at,
    streak_current: 3, streak_max: 3, streak_last_date: day(B, -1),
  });
  // On vacation since yesterday: no reminder at all.
  await profile(away, B, {
    due_today_reminder_enabled: true, due_today_reminder_time: at, notification_enabled: true, notification_time: at, weekly_review_enabled: true, weekly_review_time: at,
    vacation_start_date: day(B, -1), vacation_end_date: day(B, 3),
  });
  await pool.query(`INSERT INTO tasks.tasks (user_id, title, type, due_date) VALUES ($1, 'while away', 'ONE_TIME', $2)`, [away, day(B)]);
  for (const user of [noStreak, noReview]) {
    await profile(user, B, {
      notification_enabled: true, notification_time: at, streak_reminder_enabled: true, streak_reminder_time: at, weekly_review_enabled: true, weekly_review_time: at,
      streak_current: 2, streak_max: 2, streak_last_date: day(B, -1),
    });
    await pool.query(`INSERT INTO tasks.tasks (user_id, title, type) VALUES ($1, 'a quest', 'ONE_TIME')`, [user]);
  }
  // Due an hour later: nothing now.
  await profile(later, B, { notification_enabled: true, streak_reminder_enabled: true, notification_time: hhmm(new Date(T.getTime() + 3_600_000), B), streak_current: 2, streak_max: 2, streak_last_date: day(B, -1), streak_reminder_time: hhmm(new Date(T.getTime() + 3_600_000), B) });
  // Due at T+5 min and at T−35 min: used by the catch-up test.
  await profile(caughtUp, B, { streak_reminder_enabled: true, streak_reminder_time: hhmm(new Date(T.getTime() + 5 * 60_000), B), streak_current: 1, streak_max: 1, streak_last_date: day(B, -1) });
  await profile(tooLate, B, { streak_reminder_enabled: true, streak_reminder_time: hhmm(new Date(T.getTime() - 35 * 60_000), B), streak_current: 1, streak_max: 1, streak_last_date: day(B, -1) });
  return { berlinDay: day(B), kiritimatiDay: day(K), pagoDay: day(P) };
}

let days: Awaited<ReturnType<typeof seed>>;

beforeAll(async () => {
  const config = await testSystemConfig({ CRON_SECRET: SECRET }, { natsUrl: nats.url() });
  const now = () => clock;
  // Replica A runs tasks, a scheduler and the gateway; replica B a second scheduler on its own connection.
  await startReplica(config, [tasksService, createSchedulerService({ now }), gatewayService]);
  await startReplica(config, [createSchedulerService({ now })]);
  pool = pools[0]!;
  url = `http://127.0.0.1:${config.PORT}/api/cron`;
  observer = await createNatsBus({ servers: nats.url(), name: 'observer', log });
  await observer.consume(notificationRequested, async (m) => void (ours.has(m.userId) && received.push(m)), { durable: 'cron-test-observer' });
  days = await seed();
  // each switches one reminder off as a person does, through PUT /api/settings/notifications
  const identity = serveTestIdentities(buses[0]!);
  try {
    for (const [user, body] of [[noStreak, { streakReminderEnabled: false }], [noReview, { weeklyReviewEnabled: false }]] as const) {
      const res = await fetch(url.replace('/api/cron', '/api/settings/notifications'), { method: 'PUT', headers: { authorization: `Bearer test-${user}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ enabled: true, streakReminderEnabled: user !== noStreak, weeklyReviewEnabled: user !== noReview });
    }
  } finally {
    await identity.stop();
  }
});

afterAll(async () => {
  await observer?.close();
  for (const r of running.reverse()) await r.stop().catch(() => undefined);
  for (const b of buses) await b.close();
  for (const p of pools) await p.end();
});

const cron = async (authorization = `Bearer ${SECRET}`) => {
  const res = await fetch(url, { method: 'POST', headers: { authorization } });
  expect(res.status).toBe(200);
  return (await res.json()) as CronRunSummary;
};

/** Wait until the scheduler outbox has relayed everything and the observer holds that many of ours. */
async function settled(expected: number) {
  for (let i = 0; i < 400; i++) {
    const { rows } = await pool.query<{ pending: number }>('SELECT count(*) FILTER (WHERE published_at IS NULL)::int AS pending FROM scheduler.outbox');
    if (rows[0]!.pending === 0 && received.length >= expected) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`waited for ${expected} notifications, have ${received.length}`);
}
const keys = () => received.map((r) => r.dedupeKey).sort();

describe('cron dispatch', () => {
  it('sends each due reminder exactly once, with concurrent calls spread over two scheduler replicas', async () => {
    const summaries = await Promise.all([cron(), cron(), cron(), cron()]);
    // Each job of the bucket ran in exactly one of the calls; the others skipped it.
    for (const job of ['morning-briefing', 'overdue', 'due-today', 'recurring-due', 'daily-quest', 'streak-reminder', 'weekly-review']) {
      const ran = summaries.flatMap((s) => s.jobs).filter((j) => j.job === job && j.bucket === T.toISOString() && j.status === 'ran');
      expect(ran, job).toHaveLength(1);
    }
    const expected = [
      `due-today:${berlin}:${days.berlinDay}`,
      `overdue:${berlin}:${days.berlinDay}`,
      `recurring-due:${berlin}:${days.berlinDay}:`,
      `daily-quest:${berlin}:${days.berlinDay}`,
      `streak:${berlin}:${days.berlinDay}`,
      `weekly-review:${berlin}:2026-11-16`,
      `recurring-due:${kiritimati}:${days.kiritimatiDay}`,
      `morning-briefing:${pagoPago}:${days.pagoDay}`,
      `morning-briefing:${briefed}:${days.berlinDay}`,
      `weekly-review:${briefed}:2026-11-16`,
      `daily-quest:${noStreak}:${days.berlinDay}`,
      `weekly-review:${noStreak}:2026-11-16`,
      `daily-quest:${noReview}:${days.berlinDay}`,
      `streak:${noReview}:${days.berlinDay}`,
    ];
    await settled(expected.length);
    const got = keys();
    expect(got).toHaveLength(expected.length);
    for (const e of expected) expect(got.filter((k) => k.startsWith(e)), e).toHaveLength(1);

    const byTag = Object.fromEntries(received.map((r) => [`${r.tag}:${r.userId}`, r]));
    expect(byTag[`due-today:${berlin}`]).toMatchObject({ title: '2 tasks due today', url: '/tasks' });
    // the 40-day-old task is outside the 30-day look-back
    expect(byTag[`overdue:${berlin}`]).toMatchObject({ title: '1 overdue task', body: '• late one' });
    expect(byTag[`recurring-due:${kiritimati}`]).toMatchObject({ title: '4 recurring tasks due today' });
    expect(byTag[`morning-briefing:${pagoPago}`]!.body).toContain('Nothing due today.');
    expect(byTag[`streak:${berlin}`]).toMatchObject({ title: 'Keep your 4 days streak' });
    // the quest reminder names the quest the cron selected (tier 1: the oldest overdue task in reach)
    expect(byTag[`daily-quest:${berlin}`]).toMatchObject({ body: 'ancient' });
    const quest = await pool.query('SELECT t.title FROM tasks.daily_quests q JOIN tasks.tasks t ON t.id = q.task_id WHERE q.user_id = $1', [berlin]);
    expect(quest.rows).toEqual([{ title: 'ancient' }]);
  });

  it('a streak reminder or weekly review switched off stops only that kind (issue 55, bug 11)', () => {
    const kinds = (user: string) => received.filter((r) => r.userId === user).map((r) => r.tag).sort();
    expect(kinds(noStreak)).toEqual(['daily-quest', 'weekly-review']);
    expect(kinds(noReview)).toEqual(['daily-quest', 'streak']);
  });

  it('sends nothing more when the same bucket is called again, directly on both replicas', async () => {
    const before = received.length;
    await Promise.all([cron(), buses[0]!.request(cronRunRpc, {}), buses[1]!.request(cronRunRpc, {})]);
    await settled(before);
    const outbox = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM scheduler.outbox');
    expect(outbox.rows[0]!.n).toBe(before);
    expect(new Set(keys()).size).toBe(received.length);
    expect(received).toHaveLength(before);
  });

  it('catches up a missed bucket within 30 minutes and skips older ones', async () => {
    const before = received.length;
    // The cron comes back at T+12 min: the T+5 bucket was missed and is caught up; T−35 is too old.
    clock = new Date(T.getTime() + 12 * 60_000);
    const s = await cron();
    expect(s.buckets).toContain(new Date(T.getTime() + 5 * 60_000).toISOString());
    await settled(before + 1);
    expect(received.slice(before).map((r) => `${r.tag}:${r.userId}`)).toEqual([`streak:${caughtUp}`]);
    expect(received.some((r) => r.userId === tooLate || r.userId === later)).toBe(false);
  });

  it('reports the last run in /api/health', async () => {
    const health = (await (await fetch(url.replace('/api/cron', '/api/health'))).json()) as { cron: { lastRunAt: string | null } };
    expect(health.cron.lastRunAt).not.toBeNull();
  });

  it('reports the latest run of every job for the admin page', async () => {
    const status = await buses[0]!.request(cronJobsRpc, {});
    expect(status.lastRunAt).not.toBeNull();
    expect(status.jobs.map((j) => j.job).sort()).toEqual(expect.arrayContaining([...CRON_JOBS].sort()));
    // the catch-up call at T+12 min ran the T+10 bucket last
    const quest = status.jobs.find((j) => j.job === 'daily-quest')!;
    expect(quest).toMatchObject({ status: 'done', bucket: new Date(T.getTime() + 10 * 60_000).toISOString() });
    expect(quest.durationMs).toBeGreaterThanOrEqual(0);
    expect(status.jobs.find((j) => j.job === 'streak-reminder')!.notifications).toEqual(expect.any(Number));
  });
});
