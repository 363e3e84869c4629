/**
 * What completing a task costs (issues 58/61), with a create as the baseline in the same run: the
 * single process (`tools/start.ts`, write limits off as in every bench) on an embedded PostgreSQL with
 * pg_stat_statements, one user's requests at a time over HTTP (`--concurrency`), so each figure is
 * one operation's: PostgreSQL statements per operation (the request's own, BEGIN and COMMIT included;
 * and those beside it: the outbox relay publishing its events after the commit, the events'
 * consumers), PostgreSQL execution time per operation (pg_stat_statements' total_exec_time of all of
 * them), and the single process's CPU per operation (user + system from /proc: the gateway, the
 * service, the relay and the consumers). The figures of one request alone, exact: hot-path.test.ts.
 *
 *   node_modules/.bin/node tools/bench/complete.ts [--ops 600] [--users 20] [--warmup 100] [--concurrency 1] [--history 0] [--statements]
 *
 * Rows: create (ONE_TIME), complete (ONE_TIME, no subtasks: the common case), complete of a RECURRING
 * task (advances its due date), undo of a completion. `--statements` also prints each row's statements
 * by calls per operation, with their execution time. `--history N`: each user starts with N completed
 * tasks of a year before (NORMAL priority, no quest), written straight into the database before the
 * warm-up, as a long-time user's account would be (the achievements' figures read the history).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, createPool, freePort, startLocalPostgres, type Pool } from '@tasksvc/runtime';
import { until } from '../testenv/wait.ts';
import { pidCpuMs } from './lib/cpu.ts';
import { emitRows } from './lib/report.ts';
import { seedCompletions } from '../testenv/history.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { serverProcess, serving, SINGLE_PROCESS_ENV } from './lib/servers.ts';
import { measure } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    ops: { type: 'string', default: '600' },
    users: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '1' },
    history: { type: 'string', default: '0' },
    statements: { type: 'boolean', default: false },
  },
});
const OPS = Number(values.ops);
const USERS = Number(values.users);
const WARMUP = Number(values.warmup);
const CONCURRENCY = Number(values.concurrency);
const HISTORY = Number(values.history);

const log = createLogger('complete-bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'complete-bench-'));
const pgServer = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, settings: ['shared_preload_libraries=pg_stat_statements'] });
const databaseUrl = await createDatabase(pgServer.url, 'complete_bench');
const port = await freePort();
const server = serverProcess('start.ts', { ...SINGLE_PROCESS_ENV, DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: 'silent' });
const url = `http://127.0.0.1:${port}`;
let pool: Pool | undefined;

/**
 * What runs beside the request, after its commit: the outbox relays (services/runtime/src/outbox.ts)
 * and the event's consumers (the webhook service's ingest and claim, the notifier's channel lookup
 * for an achievement's notification). pg_stat_statements shows constants as `$n`.
 */
const BESIDE = /pg_(?:try_)?advisory|^SELECT .* FROM "[^"]+"\.outbox WHERE published_at|^UPDATE "[^"]+"\.outbox|^DELETE FROM "[^"]+"\.outbox|AS pending|json_to_recordset|"notifier"\.|"webhook"\./;
const OURS = /pg_stat_statements|bench_pending/;

interface Snapshot {
  byQuery: Map<string, { calls: number; ms: number; query: string }>;
  cpu: number;
}

async function snapshot(p: Pool): Promise<Snapshot> {
  const { rows } = await p.query<{ queryid: string; calls: string; ms: number; query: string }>(
    `SELECT queryid::text, calls, total_exec_time AS ms, query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return { byQuery: new Map(rows.map((r) => [r.queryid, { calls: Number(r.calls), ms: r.ms, query: r.query }])), cpu: pidCpuMs(server.pid) };
}

interface Row {
  op: string;
  statements: number;
  relay: number;
  pgMs: number;
  cpuMs: number;
  top: { calls: number; ms: number; query: string }[];
}

/** Run `n` operations, then wait until the outbox is published; the figures per operation. */
async function window(p: Pool, op: string, n: number, run: (i: number) => Promise<unknown>): Promise<Row> {
  const before = await snapshot(p);
  await measure(n, CONCURRENCY, run);
  await until(async () => (await p.query<{ bench_pending: string }>('SELECT count(*) AS bench_pending FROM tasks.outbox WHERE published_at IS NULL')).rows[0]!.bench_pending === '0', 'the outbox to be published', 60_000);
  const after = await snapshot(p);
  let own = 0;
  let relay = 0;
  let ms = 0;
  const top: { calls: number; ms: number; query: string }[] = [];
  for (const [id, a] of after.byQuery) {
    const b = before.byQuery.get(id) ?? { calls: 0, ms: 0 };
    const calls = a.calls - b.calls;
    if (calls <= 0 || OURS.test(a.query)) continue;
    ms += a.ms - b.ms;
    if (BESIDE.test(a.query.trim())) relay += calls;
    else own += calls;
    top.push({ calls, ms: a.ms - b.ms, query: a.query.replace(/\s+/g, ' ') });
  }
  top.sort((x, y) => y.calls - x.calls);
  return { op, statements: own / n, relay: relay / n, pgMs: ms / n, cpuMs: (after.cpu - before.cpu) / n, top };
}

try {
  await serving(url, 'the single-process mode', 120_000);
  pool = createPool(databaseUrl, log, { max: 2 });
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const users = await Promise.all(Array.from({ length: USERS }, () => createUserWithApiKey(pool!)));
  const keys = users.map((u) => u.apiKey);
  if (HISTORY > 0) {
    await seedCompletions(pool, users.map((u) => u.userId), HISTORY, { spreadDays: 365 });
    await pool.query('ANALYZE tasks.tasks, tasks.task_completions');
  }
  const headers = (i: number) => ({ authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' });
  const ok = async (res: Response) => {
    if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
    return (await res.json()) as { task: { id: string } };
  };
  const create = (i: number, body: Record<string, unknown> = {}) =>
    fetch(`${url}/api/tasks`, { method: 'POST', headers: headers(i), body: JSON.stringify({ title: `task ${i}`, type: 'ONE_TIME', priority: 'NORMAL', coinValue: 2, ...body }) }).then(ok);
  const complete = (i: number, id: string) => fetch(`${url}/api/tasks/${id}/complete`, { method: 'POST', headers: headers(i), body: '{}' }).then(ok);
  const undo = (i: number, id: string) => fetch(`${url}/api/tasks/${id}/complete`, { method: 'DELETE', headers: { authorization: headers(i).authorization } }).then(ok);

  // warm-up: every statement prepared on every pool connection it will meet, V8's code optimised
  const warm: string[] = [];
  await measure(WARMUP, CONCURRENCY, async (i) => warm.push((await create(i)).task.id));
  await measure(WARMUP, CONCURRENCY, (i) => complete(i, warm[i]!));
  await measure(WARMUP, CONCURRENCY, (i) => undo(i, warm[i]!));
  const recurringWarm: string[] = [];
  await measure(Math.min(WARMUP, USERS * 5), CONCURRENCY, async (i) => recurringWarm.push((await create(i, { type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1 })).task.id));
  await measure(recurringWarm.length, CONCURRENCY, (i) => complete(i, recurringWarm[i]!));

  // the users' ids in order: task i belongs to key i % USERS (measure runs i = 0..n-1)
  const ids: string[] = new Array<string>(OPS);
  const recurring: string[] = new Array<string>(OPS);
  const rows: Row[] = [];
  rows.push(await window(pool, 'create (baseline)', OPS, async (i) => (ids[i] = (await create(i)).task.id)));
  rows.push(await window(pool, 'complete (ONE_TIME, no subtasks)', OPS, (i) => complete(i, ids[i]!)));
  rows.push(await window(pool, 'undo of that completion', OPS, (i) => undo(i, ids[i]!)));
  for (let i = 0; i < OPS; i++) recurring[i] = (await create(i, { type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1 })).task.id;
  rows.push(await window(pool, 'complete (RECURRING)', OPS, (i) => complete(i, recurring[i]!)));

  const base = rows[0]!;
  emitRows(
    `Completing a task (single process, ${OPS} operations per row, ${USERS} users${HISTORY > 0 ? ` with ${HISTORY} earlier completions each` : ''}, ${CONCURRENCY} at a time; create is the baseline, same run)`,
    ['operation', 'statements / op (request)', 'statements / op beside it (relay, consumers)', 'PostgreSQL exec ms / op', 'node CPU ms / op', 'statements × create', 'PostgreSQL ms × create', 'node CPU × create'],
    rows.map((r) => [
      r.op,
      r.statements.toFixed(2),
      r.relay.toFixed(2),
      r.pgMs.toFixed(3),
      r.cpuMs.toFixed(2),
      (r.statements / base.statements).toFixed(1),
      (r.pgMs / base.pgMs).toFixed(1),
      (r.cpuMs / base.cpuMs).toFixed(1),
    ]),
  );
  if (values.statements) {
    for (const r of rows) {
      console.log(`\n${r.op}: statements by calls per operation (calls, execution ms per operation)`);
      for (const t of r.top.slice(0, 20)) console.log(`  ${(t.calls / OPS).toFixed(2)}  ${(t.ms / OPS).toFixed(3)} ms  ${t.query.slice(0, 160)}`);
    }
  }
} finally {
  await pool?.end();
  await server.stop();
  await pgServer.stop();
  rmSync(dir, { recursive: true, force: true });
}
