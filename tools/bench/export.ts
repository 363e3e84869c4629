/**
 * Export benchmark: GET /api/user/export of an account with 100,000 tasks (and 10,000 completions)
 * against the baseline of an account with 1,000 tasks (and 100), through the whole system (all six
 * services in one process, in-process bus, a real API key). The document is read as it streams and
 * counted, never held. Memory: the process's resident set sampled every 20 ms while each export
 * runs — "flat" means the 100k export's peak stays near the 1k export's, not 100 times above it.
 *
 *   node_modules/.bin/node tools/bench/export.ts [--tasks N]
 *
 * The accounts' rows are written with SQL (generate_series): what is measured is the export only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, freePort, loadConfig, startLocalPostgres } from '@tasksvc/runtime';
import { startSystem, type RunningSystem } from '../system.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { emitRows } from './lib/report.ts';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '100000' } } });
const N = Number(values.tasks);
const BASELINE = 1_000;

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-export-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });
const MiB = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;

/** An account with `tasks` tasks (every tenth recurring, every fifth with notes) and a tenth as many completions. */
async function account(system: RunningSystem, tasks: number): Promise<string> {
  const user = await createUserWithApiKey(system.pool);
  // the tasks service makes the profile on the first request
  const first = await fetch(`${system.url}/api/tasks?limit=1`, { headers: { authorization: user.authorization } });
  if (first.status !== 200) throw new Error(`first request: ${first.status}`);
  await system.pool.query(
    `INSERT INTO tasks.tasks (user_id, title, notes, type, priority, recurrence_type, recurrence_interval, recurrence_anchor, next_due_date, due_date, sort_order)
     SELECT $1, 'Task ' || i || ' with a title of a usual length', CASE WHEN i % 5 = 0 THEN 'Notes for task ' || i ELSE NULL END,
            CASE WHEN i % 10 = 0 THEN 'RECURRING' ELSE 'ONE_TIME' END, CASE WHEN i % 3 = 0 THEN 'HIGH' ELSE 'NORMAL' END,
            CASE WHEN i % 10 = 0 THEN 'INTERVAL' ELSE NULL END, CASE WHEN i % 10 = 0 THEN 2 ELSE NULL END,
            CASE WHEN i % 10 = 0 THEN DATE '2030-01-01' ELSE NULL END, CASE WHEN i % 10 = 0 THEN DATE '2030-01-01' + (i % 365) ELSE NULL END,
            DATE '2030-01-01' + (i % 365), i
       FROM generate_series(1, $2::int) i`,
    [user.userId, tasks],
  );
  await system.pool.query(
    `INSERT INTO tasks.task_completions (user_id, task_id, completed_at, local_date, coins_awarded)
     SELECT $1, t.id, now() - make_interval(days => (n % 700)::int), (now() - make_interval(days => (n % 700)::int))::date, 1
       FROM (SELECT id, row_number() OVER () AS n FROM tasks.tasks WHERE user_id = $1 LIMIT $2::int) t`,
    [user.userId, Math.floor(tasks / 10)],
  );
  await system.pool.query('ANALYZE tasks.tasks, tasks.task_completions');
  return user.authorization;
}

/** One export, read as it streams: time to the first byte and to the last, bytes, and the process's peak RSS meanwhile. */
async function exportOnce(system: RunningSystem, authorization: string) {
  globalThis.gc?.();
  const idleRss = process.memoryUsage().rss;
  let peakRss = idleRss;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    const t0 = performance.now();
    const res = await fetch(`${system.url}/api/user/export`, { headers: { authorization } });
    if (res.status !== 200 || !res.body) throw new Error(`export: ${res.status} ${await res.text()}`);
    let bytes = 0;
    let firstByte = 0;
    let tail = '';
    const reader = res.body.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      const chunk = r.value;
      if (!firstByte) firstByte = performance.now() - t0;
      bytes += chunk.byteLength;
      tail = (tail + Buffer.from(chunk).toString('utf8')).slice(-64);
    }
    if (!tail.trimEnd().endsWith('}')) throw new Error('export: the document did not end');
    return { firstByte, total: performance.now() - t0, bytes, idleRss, peakRss, tasks: Number(res.headers.get('x-export-tasks')) };
  } finally {
    clearInterval(timer);
  }
}

try {
  const config = loadConfig({
    ...SINGLE_PROCESS_ENV,
    DATABASE_URL: await createDatabase(pg.url, `bench_${randomUUID().slice(0, 8)}`),
    PORT: String(await freePort()),
    LOG_LEVEL: 'silent',
  });
  const system = await startSystem(config, { log });
  const rows: (string | number)[][] = [];
  try {
    const small = await account(system, BASELINE);
    const large = await account(system, N);
    await exportOnce(system, small); // warm-up: code paths compiled, pools filled
    const base = await exportOnce(system, small);
    const run = await exportOnce(system, large);
    if (run.tasks !== N || base.tasks !== BASELINE) throw new Error(`exported ${base.tasks} and ${run.tasks} tasks`);
    for (const [label, r] of [[`${BASELINE.toLocaleString('en')} tasks (baseline)`, base], [`${N.toLocaleString('en')} tasks`, run]] as const) {
      rows.push([label, Math.round(r.firstByte), Math.round(r.total), MiB(r.bytes), Math.round((r.tasks / r.total) * 1000), MiB(r.peakRss), MiB(r.peakRss - r.idleRss)]);
    }
    rows.push([`${N.toLocaleString('en')} vs ${BASELINE.toLocaleString('en')}`, '—', `${(run.total / base.total).toFixed(1)}x`, `${(run.bytes / base.bytes).toFixed(0)}x`, '—', `${(run.peakRss / base.peakRss).toFixed(2)}x`, '—']);
  } finally {
    await system.stop();
  }
  console.log(`Export benchmark: Node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}; one process (all six services, in-process bus), one PostgreSQL.`);
  console.log('Times in ms; memory of the whole process (server and the reading client), sampled every 20 ms.\n');
  emitRows(`Export of ${N.toLocaleString('en')} tasks (GET /api/user/export, streamed)`, ['account', 'first byte ms', 'total ms', 'document MiB', 'tasks/s', 'peak RSS MiB', 'RSS above idle MiB'], rows);
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
