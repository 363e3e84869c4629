/**
 * Reminders benchmark (issue #57): 10,000 reminders due within one minute, dispatched by the
 * scheduler's due-queue (claim FOR UPDATE SKIP LOCKED → tasks.reminders.check → handled + outbox in
 * one transaction), once with no other reminder stored and once with 1,000,000 future reminders
 * stored beside them. The two cases are the baseline and the measured one of the same run: the
 * queue's cost must not grow with the reminders waiting in the future.
 *
 *   node_modules/.bin/node tools/bench/reminders.ts [--due 10000] [--future 1000000] [--window-s 60]
 *
 * Printed per case: dispatch wall time (first reminder due → last one handled), the delay of each
 * reminder (handled_at − fire_at: p50, p99, max), PostgreSQL CPU and the process's CPU over the
 * window. In-process bus, the tasks and scheduler services in this process, a local PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REMINDER_ARMED_SUBJECT } from '@tasksvc/proto';
import { createDatabase, createLogger, createMemoryBus, createPool, loadConfig, startLocalPostgres, startService } from '@tasksvc/runtime';
import { createSchedulerService } from '@tasksvc/scheduler';
import { tasksService } from '@tasksvc/tasks';
import { postgresCpuMs, processCpuMs } from './lib/cpu.ts';
import { SINGLE_PROCESS_ENV } from './lib/servers.ts';

const { values } = parseArgs({
  options: {
    due: { type: 'string', default: '10000' },
    future: { type: 'string', default: '1000000' },
    'window-s': { type: 'string', default: '60' },
  },
});
const DUE = Number(values.due);
const FUTURE = Number(values.future);
const WINDOW_MS = Number(values['window-s']) * 1000;
const USERS = 100;

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-reminders-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, settings: ['shared_buffers=512MB'] });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void pg.stop().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  });
}

const ISO = `to_char(x AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

async function runCase(label: string, future: number) {
  const config = loadConfig({ ...SINGLE_PROCESS_ENV, DATABASE_URL: await createDatabase(pg.url, `bench_reminders_${future}`), LOG_LEVEL: 'silent' });
  const pool = createPool(config.DATABASE_URL, log, { max: 20 });
  const bus = createMemoryBus(log);
  const services = [await startService(tasksService, { config, bus, pool, log }), await startService(createSchedulerService(), { config, bus, pool, log })];
  const t0 = performance.now();
  // future reminders: tasks that are not due in this run (their rows are all the queue sees of them)
  await pool.query(
    `INSERT INTO scheduler.reminder_queue (task_id, reminder_key, fire_at, user_id, version)
     SELECT gen_random_uuid(), 'before:30', now() + interval '1 day' + random() * interval '30 days', gen_random_uuid(), now() FROM generate_series(1, $1)`,
    [future],
  );
  // the due ones: real tasks with one { at } reminder each, spread over the window from 15 s on
  const first = Date.now() + 15_000;
  await pool.query(`INSERT INTO tasks.profiles (user_id) SELECT gen_random_uuid() FROM generate_series(1, $1)`, [USERS]);
  await pool.query(
    `WITH u AS (SELECT user_id, row_number() OVER () - 1 AS rn FROM tasks.profiles),
          d AS (SELECT g, to_timestamp(($2::float8 + g * $3::float8 / $1) / 1000) AS x FROM generate_series(0, $1 - 1) g),
          t AS (INSERT INTO tasks.tasks (user_id, title, type, reminders)
                SELECT u.user_id, 'bench ' || g, 'ONE_TIME', jsonb_build_array(jsonb_build_object('at', ${ISO})) FROM d JOIN u ON u.rn = g % ${USERS}
                RETURNING id, user_id, (reminders->0->>'at')::timestamptz AS x)
     INSERT INTO scheduler.reminder_queue (task_id, reminder_key, fire_at, user_id, version) SELECT id, 'at:' || ${ISO}, x, user_id, now() FROM t`,
    [DUE, first, WINDOW_MS],
  );
  // the insert's own vacuum and statistics now, not inside the measured window (autovacuum would
  // otherwise visit the freshly written million rows during the dispatch and be counted with it)
  await pool.query('VACUUM ANALYZE scheduler.reminder_queue');
  await pool.query('VACUUM ANALYZE tasks.tasks');
  // and the seed's dirty pages written out now (the checkpointer's CPU is PostgreSQL's too)
  await pool.query('CHECKPOINT');
  const seedS = (performance.now() - t0) / 1000;
  bus.broadcast(REMINDER_ARMED_SUBJECT, { at: new Date(first).toISOString() });
  await new Promise((r) => setTimeout(r, first - Date.now()));
  const cpu0 = { node: processCpuMs(), pg: postgresCpuMs(join(dir, 'pg')) };
  for (let handled = 0; handled < DUE; ) {
    await new Promise((r) => setTimeout(r, 500));
    // the due rows still waiting, through the queue's own partial index (counting the handled rows
    // instead scanned the million stored ones at every look, and was most of the 1M case's PostgreSQL
    // CPU); on a loaded machine a connection may time out: the next look tries again
    handled = await pool
      .query<{ n: number }>('SELECT count(*)::int AS n FROM scheduler.reminder_queue WHERE handled_at IS NULL AND fire_at <= $1', [new Date(first + WINDOW_MS)])
      .then((r) => DUE - r.rows[0]!.n)
      .catch(() => handled);
    process.stderr.write(`\r${label}: ${handled} of ${DUE} handled`);
  }
  process.stderr.write('\n');
  const cpu = { nodeS: (processCpuMs() - cpu0.node) / 1000, pgS: (postgresCpuMs(join(dir, 'pg')) - cpu0.pg) / 1000 };
  const { rows } = await pool.query<{ p50: number; p99: number; max: number; last: number; sent: number }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY d) AS p99, max(d) AS max,
            extract(epoch FROM max(handled_at) - min(fire_at))::float8 AS last, count(*) FILTER (WHERE outcome = 'sent')::int AS sent
     FROM (SELECT extract(epoch FROM handled_at - fire_at)::float8 AS d, handled_at, fire_at, outcome FROM scheduler.reminder_queue WHERE handled_at IS NOT NULL) s`,
  );
  const r = rows[0]!;
  for (const s of services.reverse()) await s.stop();
  await bus.close();
  await pool.end();
  return { label, future, due: DUE, seedS: +seedS.toFixed(1), dispatchS: +r.last.toFixed(1), sent: r.sent, delayP50S: +r.p50.toFixed(2), delayP99S: +r.p99.toFixed(2), delayMaxS: +r.max.toFixed(2), pgCpuS: +cpu.pgS.toFixed(2), nodeCpuS: +cpu.nodeS.toFixed(2) };
}

try {
  const base = await runCase('baseline: no future reminders', 0);
  console.log(JSON.stringify(base));
  const big = await runCase(`${FUTURE.toLocaleString('en')} future reminders stored`, FUTURE);
  console.log(JSON.stringify(big));
  console.log(`\n| case | due | dispatch (first due → last handled) | delay p50 / p99 / max | PostgreSQL CPU | process CPU |`);
  console.log(`|---|---|---|---|---|---|`);
  for (const c of [base, big]) console.log(`| ${c.label} | ${c.due.toLocaleString('en')} (${c.sent} sent) | ${c.dispatchS} s | ${c.delayP50S} / ${c.delayP99S} / ${c.delayMaxS} s | ${c.pgCpuS} s | ${c.nodeCpuS} s |`);
  console.log(`\nratio (1M stored / baseline): PostgreSQL CPU ${(big.pgCpuS / base.pgCpuS).toFixed(2)}x, delay p99 ${(big.delayP99S / Math.max(0.01, base.delayP99S)).toFixed(2)}x`);
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
