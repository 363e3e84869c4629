/**
 * Where two tasks replicas spend more per create than one (issue 58; docs/kubernetes.md "Replicas share
 * the load"). A diagnosis tool, not in `npm run bench`: windows of `--ops` creates from 10 callers for
 * `--users` users, `--rounds` of them per phase, the phases in `--order`: `one` (one tasks process),
 * `two` (a second one on the same queue group, started and warmed first), `restart` (the first anew,
 * alone: what a fresh process pays). Per window: each process's CPU per create, idle subtracted (and
 * per create it handled), and from pg_stat_statements the statements per create by kind (create
 * batches and their size, creates written alone, relay rounds and rows per round), and the tasks
 * processes' read and write system calls and voluntary switches per create handled (/proc).
 *
 *   node tools/bench/replica-probe.ts [--ops 1000] [--rounds 3] [--warm 200] [--users 20] [--order one,two,restart]
 *
 * `--warm N`: creates before the first window and after each start. pg_stat_database's commit counter
 * is printed too, but it lags (backends report it in batches): read the statements instead.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createLogger, createPool } from '@tasksvc/runtime';
import { startCluster, type Replica } from '../chaos/cluster.ts';
import { scrape, value } from '../testenv/metrics.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { until } from '../testenv/wait.ts';
import { pidCpuMs, postgresCpuMs, procWakes } from './lib/cpu.ts';
import { measure as drivePool } from './lib/stats.ts';
import { outboxWatch } from './lib/targets.ts';

/** every option a string: the number of creates per window, of rounds per phase, of warm-up creates, of users; the phases in order */
const DEFAULTS = { ops: '1000', rounds: '3', warm: '200', users: '20', order: 'one,two' };
const { values } = parseArgs({ options: Object.fromEntries(Object.entries(DEFAULTS).map(([k, v]) => [k, { type: 'string', default: v }])) as Record<keyof typeof DEFAULTS, { type: 'string'; default: string }> });
const N = Number(values.ops);
const USERS = Number(values.users);
const C = 10;
const log = createLogger('probe', 'silent');

const cluster = await startCluster({ LOG_LEVEL: 'silent' }, { pgSettings: ['autovacuum=off', 'shared_preload_libraries=pg_stat_statements'] });
let replica: Replica | undefined;
try {
  await cluster.ready(300_000);
  const pool = createPool(cluster.databaseUrl, log);
  const users: string[] = [];
  for (let i = 0; i < USERS; i++) users.push((await createUserWithApiKey(pool)).authorization);
  await pool.end();
  const c = new pg.Client({ connectionString: cluster.databaseUrl });
  await c.connect();
  await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');

  const create = (i: number) =>
    fetch(`${cluster.url}/api/tasks`, { method: 'POST', headers: { authorization: users[i % USERS]!, 'content-type': 'application/json' }, body: JSON.stringify({ title: `probe ${i}`, priority: 'NORMAL' }) });
  const drive = async (count: number) => {
    let wrong = 0;
    await drivePool(count, C, async (i) => {
      const res = await create(i).catch(() => undefined);
      await res?.arrayBuffer();
      if (res?.status !== 201) wrong++;
    });
    return wrong;
  };
  const outbox = outboxWatch(cluster.databaseUrl);
  const settled = async () => {
    await until(outbox.empty, 'outbox drained', 120_000);
    await new Promise((r) => setTimeout(r, 1_500));
  };

  const procs = () => {
    const m: [string, number][] = [
      ['gateway', cluster.pid('gateway')!],
      ['tasks', cluster.pid('tasks')!],
      ...(replica ? [['tasks2', replica.pid] as [string, number]] : []),
      ['auth', cluster.pid('auth')!],
      ['notifier', cluster.pid('notifier')!],
      ['webhook', cluster.pid('webhook')!],
      ['scheduler', cluster.pid('scheduler')!],
      ['nats', cluster.natsPid()!],
    ];
    return m;
  };
  const cpu = () => {
    const m = new Map(procs().map(([n, p]) => [n, pidCpuMs(p)]));
    m.set('PostgreSQL', postgresCpuMs(cluster.postgresDataDir));
    return m;
  };
  type Stmt = { query: string; calls: number; rows: number };
  const stmts = async () =>
    new Map(
      (
        await c.query<{ queryid: string; query: string; calls: string; rows: string }>(
          'SELECT queryid::text, query, calls, rows FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())',
        )
      ).rows.map((r) => [r.queryid, { query: r.query, calls: Number(r.calls), rows: Number(r.rows) } satisfies Stmt]),
    );
  const commits = async () => Number((await c.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0]!.n);
  const handled = async () =>
    Promise.all([cluster.metricsUrl('tasks'), ...(replica ? [replica.metricsUrl] : [])].map(async (u) => value(await scrape(u), 'tasksvc_bus_handler_duration_seconds_count', { subject: 'tasks.http.create' })));

  const idleRate = new Map<string, number>(); // ms CPU per ms wall
  const measureIdle = async (ms: number) => {
    const c0 = cpu();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    const c1 = cpu();
    const dt = performance.now() - t0;
    for (const [k, v] of c1) idleRate.set(k, (v - (c0.get(k) ?? v)) / dt);
  };
  const classify = (q: string) => {
    if (q.includes('json_to_recordset')) return 'create batch';
    if (q.includes('pg_advisory_lock(') || q.includes('pg_try_advisory_lock(')) return 'relay lock';
    if (q.includes('pg_advisory_unlock')) return 'relay unlock';
    if (/^SELECT id, subject, payload, traceparent FROM "tasks".outbox/.test(q)) return 'relay select tasks';
    if (/UPDATE "tasks".outbox SET published_at/.test(q)) return 'relay mark tasks';
    if (/FROM "tasks".outbox WHERE published_at IS NULL LIMIT 1/.test(q)) return 'relay poll tasks';
    if (/outbox/.test(q) && /SELECT id, subject/.test(q)) return 'relay select other';
    if (/INSERT INTO "tasks"."tasks"|INSERT INTO tasks.tasks|insert into "tasks"/i.test(q)) return 'create single';
    if (/pg_stat|pg_database|count\(\*\)/.test(q)) return 'probe';
    return `other: ${q.replace(/\s+/g, ' ').slice(0, 90)}`;
  };

  /** a tasks process's system calls and voluntary switches so far: how often it woke and wrote */
  const wakes = () =>
    new Map(
      procs()
        .filter(([n]) => n.startsWith('tasks'))
        .map(([n, pid]) => [n, procWakes(pid)]),
    );
  const window = async (label: string) => {
    const w0 = wakes();
    const h0 = await handled();
    const s0 = await stmts();
    const x0 = await commits();
    const c0 = cpu();
    const t0 = performance.now();
    const wrong = await drive(N);
    const driveMs = performance.now() - t0;
    await settled();
    const ms = performance.now() - t0;
    const c1 = cpu();
    const x1 = await commits();
    const s1 = await stmts();
    const h1 = await handled();
    const per = new Map<string, { calls: number; rows: number }>();
    for (const [id, s] of s1) {
      const b = s0.get(id);
      const calls = s.calls - (b?.calls ?? 0);
      if (calls === 0) continue;
      const k = classify(s.query);
      const e = per.get(k) ?? { calls: 0, rows: 0 };
      e.calls += calls;
      e.rows += s.rows - (b?.rows ?? 0);
      per.set(k, e);
    }
    console.log(`\n== ${label}: ${N} creates (${wrong} wrong) in ${driveMs.toFixed(0)} ms (${((N * 1000) / driveMs).toFixed(0)}/s), window ${ms.toFixed(0)} ms, load ${loadavg()[0]!.toFixed(2)}, handled ${h1.map((h, i) => h - h0[i]!).join(' + ')}`);
    const cpuLine: string[] = [];
    let tasksTotal = 0;
    for (const [k, v] of c1) {
      const used = v - c0.get(k)!;
      const idle = (idleRate.get(k) ?? 0) * ms;
      const us = ((used - idle) * 1000) / N;
      if (k.startsWith('tasks')) tasksTotal += us;
      cpuLine.push(`${k} ${us.toFixed(0)} (raw ${((used * 1000) / N).toFixed(0)})`);
    }
    console.log(`  CPU us/create: ${cpuLine.join(', ')}; tasks together ${tasksTotal.toFixed(0)}`);
    const hs = h1.map((h, i) => h - h0[i]!);
    const perHandled = ['tasks', 'tasks2'].filter((k, i) => hs[i]).map((k, i) => `${k} ${((((c1.get(k)! - c0.get(k)!) - (idleRate.get(k) ?? 0) * ms) * 1000) / hs[i]!).toFixed(0)}`);
    console.log(`  tasks CPU us per create it handled: ${perHandled.join(', ')}`);
    const w1 = wakes();
    const perWake = ['tasks', 'tasks2'].filter((k, i) => hs[i] && w1.has(k)).map((k, i) => {
      const [a, b] = [w0.get(k)!, w1.get(k)!];
      return `${k} reads ${((b.reads - a.reads) / hs[i]!).toFixed(2)}, writes ${((b.writes - a.writes) / hs[i]!).toFixed(2)}, voluntary switches ${((b.voluntary - a.voluntary) / hs[i]!).toFixed(2)}`;
    });
    console.log(`  per create it handled: ${perWake.join('; ')}`);
    console.log(`  commits/create ${((x1 - x0) / N).toFixed(3)}, statements/create ${([...per.values()].reduce((a, e) => a + e.calls, 0) / N).toFixed(3)}`);
    for (const [k, e] of [...per].sort((a, b) => b[1].calls - a[1].calls)) console.log(`    ${k.padEnd(40)} calls ${String(e.calls).padStart(6)} (${(e.calls / N).toFixed(3)}/create) rows ${e.rows} (${(e.rows / Math.max(1, e.calls)).toFixed(2)}/call)`);
  };

  await drive(Number(values.warm));
  await settled();
  await measureIdle(5_000);
  const startReplica = async () => {
    replica = await cluster.startReplica('tasks');
    await until(async () => (await fetch(replica!.metricsUrl.replace(/\/metrics$/, '/health')).catch(() => undefined))?.status === 200, 'replica ready', 120_000);
    await drive(Number(values.warm));
    await settled();
    const tasksRate = idleRate.get('tasks')!;
    await measureIdle(5_000);
    console.log(`  idle us/s: tasks ${(idleRate.get('tasks')! * 1e6).toFixed(0)} (before ${(tasksRate * 1e6).toFixed(0)}), tasks2 ${(idleRate.get('tasks2')! * 1e6).toFixed(0)}`);
  };
  for (const phase of values.order.split(',')) {
    if (phase === 'one') {
      if (replica) {
        await replica.kill();
        replica = undefined;
        // nats-server drops the dead process's subscriptions once it reads the closed socket
        await new Promise((r) => setTimeout(r, 3_000));
        await drive(Number(values.warm));
        await settled();
      }
      for (let r = 1; r <= Number(values.rounds); r++) await window(`one replica, round ${r}`);
    } else if (phase === 'restart') {
      // the first tasks process anew, alone: is a fresh process's first thousands of creates dearer?
      if (replica) {
        await replica.kill();
        replica = undefined;
      }
      await cluster.terminate('tasks');
      await cluster.start('tasks');
      await cluster.ready(120_000);
      await drive(Number(values.warm));
      await settled();
      await measureIdle(5_000);
      for (let r = 1; r <= Number(values.rounds); r++) await window(`one replica restarted, round ${r}`);
    } else {
      if (!replica) await startReplica();
      for (let r = 1; r <= Number(values.rounds); r++) await window(`two replicas, round ${r}`);
    }
  }
  await outbox.end();
  await c.end();
} finally {
  await cluster.stop();
}
process.exit(0);
