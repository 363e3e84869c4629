/**
 * API benchmark: task create and task list through the whole HTTP path (fetch → gateway → bus →
 * tasks service → PostgreSQL), once over the in-process bus and once over NATS (a private
 * nats-server on loopback), against the same operations done directly with `pg` in this process.
 * One run, one private PostgreSQL (fsync off for all three, so the comparison is fair), printed
 * as a table with p50/p99 and the ratio to direct SQL.
 *
 *   node_modules/.bin/node tools/bench/api.ts [--requests N] [--concurrency C]
 *
 * Identity: the auth service is replaced by the tasks tests' identity TEST DOUBLE (a bearer
 * `test-<uuid>`), so the numbers measure the tasks path, not session lookup.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, createPool, migrate, startLocalPostgres, type Pool } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { startNats } from '../testenv/nats.ts';
import { tasksUnderTest } from './lib/servers.ts';
import { measure, table, type Summary } from './lib/stats.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '400' }, concurrency: { type: 'string', default: '8' } } });
const N = Number(values.requests);
const C = Number(values.concurrency);
const LIST_LIMIT = 50;

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-api-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });
const nats = await startNats({ storeDir: join(dir, 'nats') });

type Row = [string, string, number, number, number, number, number];
const rows: Row[] = [];

async function viaGateway(label: string, natsUrl: string | undefined): Promise<Record<string, Summary>> {
  const { system, stop } = await tasksUnderTest(pg.url, log, natsUrl);
  const user = randomUUID();
  const headers = { authorization: `Bearer test-${user}`, 'content-type': 'application/json' };
  const create = async (i: number) => {
    const res = await fetch(`${system.url}/api/tasks`, { method: 'POST', headers, body: JSON.stringify({ title: `Task ${i}`, priority: 'NORMAL', dueDate: '2030-01-15' }) });
    if (res.status !== 201) throw new Error(`${label} create: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const list = async () => {
    const res = await fetch(`${system.url}/api/tasks?limit=${LIST_LIMIT}`, { headers: { authorization: headers.authorization } });
    if (res.status !== 200) throw new Error(`${label} list: ${res.status}`);
    await res.arrayBuffer();
  };
  try {
    await measure(50, 4, create); // warm-up: JIT, pools, connections
    await measure(50, 4, list);
    return { create1: await measure(N, 1, create), createC: await measure(N, C, create), list1: await measure(N, 1, list), listC: await measure(N, C, list) };
  } finally {
    await stop();
  }
}

/** The same work with pg alone: the create transaction (task row + outbox row) and the page query. */
async function direct(): Promise<Record<string, Summary>> {
  const url = await createDatabase(pg.url, `bench_${randomUUID().slice(0, 8)}`);
  const pool: Pool = createPool(url, log, { max: 20 });
  await migrate(pool, { ...tasksService.migrations!, log });
  const user = randomUUID();
  await pool.query('INSERT INTO tasks.profiles (user_id) VALUES ($1)', [user]);
  const create = async (i: number) => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      const { rows: r } = await c.query<{ id: string }>(
        `INSERT INTO tasks.tasks (user_id, title, type, priority, due_date, sort_order) VALUES ($1, $2, 'ONE_TIME', 'NORMAL', '2030-01-15', $3) RETURNING *`,
        [user, `Task ${i}`, i],
      );
      await c.query(`INSERT INTO tasks.outbox (id, subject, payload) VALUES ($1, 'events.task.created', $2)`, [randomUUID(), JSON.stringify({ id: r[0]!.id })]);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
  };
  const list = async () => {
    await pool.query(`SELECT * FROM tasks.tasks WHERE user_id = $1 ORDER BY sort_order, created_at, id LIMIT ${LIST_LIMIT}`, [user]);
  };
  try {
    await measure(50, 4, create);
    await measure(50, 4, list);
    return { create1: await measure(N, 1, create), createC: await measure(N, C, create), list1: await measure(N, 1, list), listC: await measure(N, C, list) };
  } finally {
    await pool.end();
  }
}

try {
  const baseline = await direct();
  const memory = await viaGateway('in-process', undefined);
  const overNats = await viaGateway('NATS', nats.url);
  const ops: [string, string][] = [
    ['create1', 'create, 1 caller'],
    ['createC', `create, ${C} callers`],
    ['list1', `list ${LIST_LIMIT}, 1 caller`],
    ['listC', `list ${LIST_LIMIT}, ${C} callers`],
  ];
  for (const [key, what] of ops) {
    const base = baseline[key]!;
    for (const [path, s] of [['direct pg', base], ['HTTP, in-process bus', memory[key]!], ['HTTP, NATS', overNats[key]!]] as const) {
      rows.push([what, path, s.p50, s.p99, s.opsPerSec, s.p50 / base.p50, s.p99 / base.p99]);
    }
  }
  console.log(`API benchmark: ${N} operations per row (after a 50-op warm-up), Node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}`);
  console.log('Latencies in ms; ratios are against direct pg (same run, same PostgreSQL).\n');
  console.log(table(['operation', 'path', 'p50 ms', 'p99 ms', 'ops/s', 'p50 ratio', 'p99 ratio'], rows));
} finally {
  await nats.stop();
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
