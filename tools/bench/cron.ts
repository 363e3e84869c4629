/**
 * Cron dispatch benchmark: one POST /api/cron-equivalent run (scheduler.cron.run over the
 * in-process bus → tasks collectReminders → PostgreSQL → scheduler sent keys + outbox) for 10k and
 * 100k users, every one of them due in the same 5-minute bucket for every job (the worst case: a
 * real bucket holds about 1/288 of the users of one zone). Each user has 6 tasks (2 due today,
 * 1 overdue, 2 recurring due, 1 open without date), seeded with set-based inserts.
 *
 *   node_modules/.bin/node tools/bench/cron.ts [--users 10000,100000]
 *
 * Measured: wall time of the dispatch until every notification request is in the scheduler's
 * outbox, printed as seconds and per-user cost; then until the outbox relay has published them all
 * (it runs concurrently in the same process); then a second call for the same bucket (the
 * idempotent path: every job already claimed).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cronRunRpc, type CronRunSummary } from '@tasksvc/proto';
import { createDatabase, createLogger, createMemoryBus, createPool, loadConfig, startLocalPostgres, startService } from '@tasksvc/runtime';
import { createSchedulerService } from '@tasksvc/scheduler';
import { tasksService } from '@tasksvc/tasks';

const { values } = parseArgs({ options: { users: { type: 'string', default: '10000,100000' } } });
const sizes = values.users.split(',').map(Number);
// Sunday 12:00 UTC: the weekly review is due too.
const T = new Date('2026-11-22T12:00:00Z');

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-cron-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });
// An interrupted run must not leave its PostgreSQL behind.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void pg.stop().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

type Row = { users: number; seedS: number; dispatchS: number; perUserMs: number; notifications: number; drainS: number; repeatS: number };
const rows: Row[] = [];

try {
  for (const n of sizes) {
    const config = loadConfig({
      DATABASE_URL: await createDatabase(pg.url, `bench_cron_${n}`),
      AUTH_SECRET: 'bench-secret-bench-secret-bench-secret-0',
      AUTH_TRUST_HOST: 'true',
      RUNTIME_ENV: 'test',
      LOG_LEVEL: 'silent',
      DISABLE_UPDATE_CHECK: 'true',
    });
    const pool = createPool(config.DATABASE_URL, log, { max: 20 });
    const bus = createMemoryBus(log);
    const services = [await startService(tasksService, { config, bus, pool, log }), await startService(createSchedulerService({ now: () => T }), { config, bus, pool, log })];

    const s0 = Date.now();
    await pool.query(
      `INSERT INTO tasks.profiles (user_id, timezone, notification_enabled, notification_time, streak_reminder_time, weekly_review_time,
         due_today_reminder_enabled, due_today_reminder_time, overdue_reminder_enabled, overdue_reminder_time,
         recurring_due_reminder_enabled, recurring_due_reminder_time, streak_current, streak_max, streak_last_date)
       SELECT gen_random_uuid(), 'UTC', true, '12:00', '12:00', '12:00', true, '12:00', true, '12:00', true, '12:00', 3, 3, DATE '2026-11-21'
         FROM generate_series(1, $1)`,
      [n],
    );
    await pool.query(
      `INSERT INTO tasks.tasks (user_id, title, type, due_date, sort_order)
       SELECT p.user_id, k.title, 'ONE_TIME', k.due, k.ord FROM tasks.profiles p
       CROSS JOIN (VALUES ('due a', DATE '2026-11-22', 1), ('due b', DATE '2026-11-22', 2), ('late', DATE '2026-11-19', 3), ('someday', NULL, 4)) AS k(title, due, ord)`,
    );
    await pool.query(
      `INSERT INTO tasks.tasks (user_id, title, type, recurrence_type, recurrence_interval, next_due_date, recurrence_anchor, sort_order)
       SELECT p.user_id, k.title, 'RECURRING', 'INTERVAL', 1, DATE '2026-11-22', DATE '2026-11-22', k.ord FROM tasks.profiles p
       CROSS JOIN (VALUES ('habit a', 5), ('habit b', 6)) AS k(title, ord)`,
    );
    await pool.query('ANALYZE');
    const seedS = (Date.now() - s0) / 1000;

    const d0 = Date.now();
    const summary: CronRunSummary = await bus.request(cronRunRpc, {}, { timeoutMs: 3_600_000 });
    const dispatchS = (Date.now() - d0) / 1000;
    const failed = summary.jobs.filter((j) => j.status === 'failed');
    if (failed.length) throw new Error(`jobs failed: ${JSON.stringify(failed)}`);
    const notifications = summary.jobs.reduce((a, j) => a + j.notifications, 0);

    // The outbox relay publishes while the dispatch runs (same process, same database); wait for it
    // so the repeated call below measures the idempotent path alone.
    for (;;) {
      const { rows: pending } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM scheduler.outbox WHERE published_at IS NULL');
      if (pending[0]!.n === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const drainS = (Date.now() - d0) / 1000;

    const r0 = Date.now();
    await bus.request(cronRunRpc, {}, { timeoutMs: 600_000 });
    const repeatS = (Date.now() - r0) / 1000;

    rows.push({ users: n, seedS, dispatchS, perUserMs: (dispatchS * 1000) / n, notifications, drainS, repeatS });
    const perJob = await pool.query<{ job: string; s: number }>(
      `SELECT job, extract(epoch FROM finished_at - started_at)::float AS s FROM scheduler.cron_runs WHERE bucket = $1 ORDER BY started_at`,
      [T.toISOString()],
    );
    console.log(`[cron] ${n} users: ${perJob.rows.map((j) => `${j.job} ${j.s.toFixed(2)}s`).join(', ')}; notifications ${notifications}`);
    for (const s of services.reverse()) await s.stop();
    await bus.close();
    await pool.end();
  }
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`\ncron dispatch, every user due in one bucket for all seven jobs (${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, PostgreSQL fsync off, in-process bus)`);
console.log('users    | seed s | dispatch s | per user ms | notifications | all published s | repeat call s');
for (const r of rows) {
  console.log(
    `${String(r.users).padEnd(8)} | ${r.seedS.toFixed(1).padStart(6)} | ${r.dispatchS.toFixed(2).padStart(10)} | ${r.perUserMs.toFixed(3).padStart(11)} | ${String(r.notifications).padStart(13)} | ${r.drainS.toFixed(1).padStart(15)} | ${r.repeatS.toFixed(3).padStart(13)}`,
  );
}
