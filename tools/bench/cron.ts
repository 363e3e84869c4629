/**
 * Cron dispatch benchmark: one POST /api/cron-equivalent run (scheduler.cron.run over the
 * in-process bus → tasks collectReminders → PostgreSQL → scheduler sent keys + outbox) for 10k and
 * 100k users, every one of them due in the same 5-minute bucket for every job (the worst case: a
 * real bucket holds about 1/288 of the users of one zone). Each user has 6 tasks (2 due today,
 * 1 overdue, 2 recurring due, 1 open without date), seeded with set-based inserts.
 *
 * A second case ("spread") seeds 100k users as real ones are: spread over time zones around the
 * world, each job's reminder time at a random minute of the day, so a 5-minute bucket holds about
 * 1/288 of every zone; one call then has to find those few hundred users among 100k.
 *
 *   node_modules/.bin/node tools/bench/cron.ts [--users 10000,100000] [--spread 100000] [--statements] [--pg-settings shared_buffers=1GB,…]
 *
 * `--statements` loads pg_stat_statements and prints the statements that took the most time in
 * each dispatch (calls, rows, total and mean ms): where a per-user cost that grows comes from.
 * `--pg-settings` passes server settings to the bench's PostgreSQL (fsync is off; default
 * `shared_buffers=1GB`, pass `--pg-settings ''` for PostgreSQL's own 128 MB); they are printed with
 * the results.
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
import { postgresCpuMs, processCpuMs } from './lib/cpu.ts';
import { SINGLE_PROCESS_ENV } from './lib/servers.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '10000,100000' },
    spread: { type: 'string', default: '100000' },
    statements: { type: 'boolean', default: false },
    // A server that holds 100k users' data gets more than PostgreSQL's 128 MB default of shared
    // buffers; with the default, the 100k case (600k tasks, 700k outbox rows and sent keys) no longer
    // fits, and every read pays a buffer miss: the per-user cost then grows with the data, not the code.
    'pg-settings': { type: 'string', default: 'shared_buffers=1GB' },
  },
});
const sizes = values.users.split(',').filter(Boolean).map(Number);
const spreadUsers = Number(values.spread);
/**
 * Zones users are spread over, one per distinct UTC offset band (half- and quarter-hour ones too).
 * Weights are not modelled: what matters to the query is many zones with few users due in each.
 */
const ZONES = [
  'Pacific/Honolulu', 'America/Anchorage', 'America/Los_Angeles', 'America/Denver', 'America/Chicago', 'America/New_York', 'America/Caracas',
  'America/Sao_Paulo', 'America/St_Johns', 'Atlantic/Azores', 'UTC', 'Europe/London', 'Europe/Berlin', 'Europe/Athens', 'Africa/Nairobi',
  'Asia/Tehran', 'Asia/Dubai', 'Asia/Kabul', 'Asia/Karachi', 'Asia/Kolkata', 'Asia/Kathmandu', 'Asia/Dhaka', 'Asia/Bangkok', 'Asia/Shanghai',
  'Australia/Eucla', 'Asia/Tokyo', 'Australia/Adelaide', 'Australia/Sydney', 'Pacific/Noumea', 'Pacific/Auckland', 'Pacific/Chatham', 'Pacific/Kiritimati',
];
// Sunday 12:00 UTC: the weekly review is due too.
const T = new Date('2026-11-22T12:00:00Z');

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-cron-'));
const pgSettings = values['pg-settings'].split(',').filter(Boolean);
const pg = await startLocalPostgres({
  dataDir: join(dir, 'pg'),
  log,
  settings: [...pgSettings, ...(values.statements ? ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'] : [])],
});
// An interrupted run must not leave its PostgreSQL behind.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void pg.stop().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

type Row = { label: string; users: number; seedS: number; dispatchS: number; perUserMs: number; nodeCpuPerUserMs: number; pgCpuPerUserMs: number; notifications: number; perSecond: number; drainS: number; repeatS: number };
const rows: Row[] = [];

/** Every user due at T for every job: all reminder times 12:00 UTC. */
const ALL_DUE = `SELECT gen_random_uuid(), 'UTC', true, '12:00', '12:00', '12:00', true, '12:00', true, '12:00', true, '12:00', 3, 3, DATE '2026-11-21', true, true
  FROM generate_series(1, $1)`;
/** Real users: a zone from ZONES and, per job, a reminder time at a random minute of the day. */
const SPREAD = `SELECT gen_random_uuid(), ($2::text[])[1 + floor(random() * cardinality($2::text[]))::int], true, pg_temp.rand_minute(), pg_temp.rand_minute(), pg_temp.rand_minute(), true, pg_temp.rand_minute(), true, pg_temp.rand_minute(), true, pg_temp.rand_minute(), 3, 3, DATE '2026-11-21', true, true
  FROM generate_series(1, $1)`;

async function runCase(label: string, n: number, profiles: string): Promise<void> {
  const config = loadConfig({ ...SINGLE_PROCESS_ENV, DATABASE_URL: await createDatabase(pg.url, `bench_cron_${label.replace(/\W/g, "_")}_${n}`), LOG_LEVEL: 'silent' });
  const pool = createPool(config.DATABASE_URL, log, { max: 20 });
  const bus = createMemoryBus(log);
  const services = [await startService(tasksService, { config, bus, pool, log }), await startService(createSchedulerService({ now: () => T }), { config, bus, pool, log })];

  const s0 = Date.now();
  const client = await pool.connect();
  try {
    // a random minute of the day; session-local, so created on the connection that seeds
    await client.query(`CREATE FUNCTION pg_temp.rand_minute() RETURNS time LANGUAGE sql VOLATILE AS $$ SELECT make_time(0, 0, 0) + floor(random() * 1440) * interval '1 minute' $$`);
    await client.query(
      `INSERT INTO tasks.profiles (user_id, timezone, notification_enabled, notification_time, streak_reminder_time, weekly_review_time,
         due_today_reminder_enabled, due_today_reminder_time, overdue_reminder_enabled, overdue_reminder_time,
         recurring_due_reminder_enabled, recurring_due_reminder_time, streak_current, streak_max, streak_last_date, streak_reminder_enabled, weekly_review_enabled)
       ${profiles}`,
      profiles === SPREAD ? [n, ZONES] : [n],
    );
  } finally {
    client.release();
  }
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
  if (values.statements) await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()');

  const cpu0 = { node: processCpuMs(), pg: postgresCpuMs(join(dir, 'pg')) };
  const d0 = Date.now();
  const summary: CronRunSummary = await bus.request(cronRunRpc, {}, { timeoutMs: 3_600_000 });
  const dispatchS = (Date.now() - d0) / 1000;
  // CPU spent by the dispatch (and the relay running beside it): steadier than wall time on a shared machine
  const nodeCpuPerUserMs = (processCpuMs() - cpu0.node) / n;
  const pgCpuPerUserMs = (postgresCpuMs(join(dir, 'pg')) - cpu0.pg) / n;
  const failed = summary.jobs.filter((j) => j.status === 'failed');
  if (failed.length) throw new Error(`jobs failed: ${JSON.stringify(failed)}`);
  const notifications = summary.jobs.reduce((a, j) => a + j.notifications, 0);
  if (values.statements) {
    const top = await pool.query<{ calls: number; rows: number; total: number; mean: number; query: string }>(
      `SELECT calls::int, rows::int, total_exec_time::float AS total, mean_exec_time::float AS mean, regexp_replace(query, '\\s+', ' ', 'g') AS query
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT 8`,
    );
    for (const t of top.rows) console.log(`[cron] ${label} ${n}: ${t.total.toFixed(0).padStart(7)} ms total, ${t.calls} calls, ${t.mean.toFixed(1)} ms mean, ${t.rows} rows: ${t.query.slice(0, 160)}`);
  }

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

  rows.push({ label, users: n, seedS, dispatchS, perUserMs: (dispatchS * 1000) / n, nodeCpuPerUserMs, pgCpuPerUserMs, notifications, perSecond: notifications / dispatchS, drainS, repeatS });
  // the jobs of a bucket run concurrently, so each figure is that job's own end, not a sum
  const perJob = await pool.query<{ job: string; s: number }>(
    `SELECT job, extract(epoch FROM finished_at - started_at)::float AS s FROM scheduler.cron_runs WHERE bucket = $1 ORDER BY finished_at`,
    [T.toISOString()],
  );
  console.log(`[cron] ${label} ${n} users, per job (finished after the claim): ${perJob.rows.map((j) => `${j.job} ${j.s.toFixed(2)}s`).join(', ')}; notifications ${notifications}`);
  for (const s of services.reverse()) await s.stop();
  await bus.close();
  await pool.end();
}

try {
  for (const n of sizes) await runCase('all-due', n, ALL_DUE);
  if (spreadUsers > 0) await runCase('spread', spreadUsers, SPREAD);
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`\ncron dispatch: "all-due" has every user due in one bucket for all seven jobs (the worst case); "spread" has users over ${ZONES.length} zones with random reminder minutes (a real bucket). ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}, PostgreSQL fsync off${pgSettings.length ? `, ${pgSettings.join(', ')}` : ''}, in-process bus`);
console.log('case     | users    | seed s | dispatch s | per user ms | node CPU ms/user | pg CPU ms/user | notifications | enqueued/s | all published s | repeat call s');
for (const r of rows) {
  console.log(
    `${r.label.padEnd(8)} | ${String(r.users).padEnd(8)} | ${r.seedS.toFixed(1).padStart(6)} | ${r.dispatchS.toFixed(2).padStart(10)} | ${r.perUserMs.toFixed(3).padStart(11)} | ${r.nodeCpuPerUserMs.toFixed(3).padStart(16)} | ${r.pgCpuPerUserMs.toFixed(3).padStart(14)} | ${String(r.notifications).padStart(13)} | ${r.perSecond.toFixed(0).padStart(10)} | ${r.drainS.toFixed(1).padStart(15)} | ${r.repeatS.toFixed(3).padStart(13)}`,
  );
}
