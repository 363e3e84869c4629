/**
 * The sizing guide's figures (issue 58, docs/kubernetes.md "Sizing"): CPU per operation in each
 * service process of the distributed system, for the operations a deployment's load is made of.
 *
 *   node_modules/.bin/node tools/bench/sizing.ts [--ops 1000] [--users 20] [--connections 10] [--idle-seconds 10] [--replica-windows 3]
 *
 * The six services run as their own processes over nats-server and one PostgreSQL (tools/chaos/
 * cluster.ts, as `npm run bench -- footprint` runs them). Each operation is `--ops` requests from
 * `--connections` callers at once; a process's CPU per operation is its utime + stime (/proc) over
 * the window — from the first request until the work the operations caused is done (the outbox
 * drained, the deliveries arrived, then every process quiet) — minus that process's idle CPU for a
 * window of the same length (measured first, nothing happening), divided by the operations:
 *
 * - create, list (50), complete: through the gateway, for users with no webhook and no channel;
 * - webhook delivery: creates of a user with one webhook endpoint on a loopback receiver, until every
 *   delivery arrived, minus the create's own figure per process: what one delivery adds;
 * - reminder: tasks whose `{ at }` reminder falls after they were all created and armed; the window
 *   is the dispatch alone (the scheduler's claim, the tasks service's check, the event, the notifier's
 *   HTTP Alert channel on the loopback receiver), per reminder that arrived in it.
 *
 * The baseline (tools/bench/baseline-server.ts: node:http + pg, one statement per operation) does
 * the same creates, lists and completes in the same run on the same PostgreSQL server, the cluster
 * paused (SIGSTOP). Deliveries have no bare baseline: a delivery's figure reads against the create's.
 *
 * Then the replicas row: a second tasks process on the same NATS queue group behind the one gateway,
 * the same creates and lists in `--replica-windows` windows per side: requests handled by each replica
 * (their bus handler histograms) and the median CPU per request of the two together against one
 * replica's, measured just before in as many windows.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, createPool, freePort, migrate } from '@tasksvc/runtime';
import { tasksService } from '@tasksvc/tasks';
import { CLUSTER_SERVICES, startCluster, type Cluster, type Replica } from '../chaos/cluster.ts';
import { scrape, value } from '../testenv/metrics.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { until } from '../testenv/wait.ts';
import { trimmedOnce } from './lib/trims.ts';
import { pidCpuMs, postgresCpuMs } from './lib/cpu.ts';
import { emitRows } from './lib/report.ts';
import { fmt, measure, median } from './lib/stats.ts';
import { serverProcess, serving } from './lib/servers.ts';
import { BENCH_PG_SETTINGS, outboxWatch, signalPids } from './lib/targets.ts';

const { values } = parseArgs({
  options: {
    ops: { type: 'string', default: '1000' },
    users: { type: 'string', default: '20' },
    connections: { type: 'string', default: '10' },
    'idle-seconds': { type: 'string', default: '10' },
    'replica-windows': { type: 'string', default: '3' },
  },
});
const N = Number(values.ops);
const USERS = Number(values.users);
const C = Number(values.connections);
const IDLE_MS = Number(values['idle-seconds']) * 1000;
/** windows per side of the replicas row (one tasks process, then two) */
const REPLICA_WINDOWS = Number(values['replica-windows']);
const log = createLogger('bench', 'silent');

type SizingOp = 'create' | 'list' | 'complete' | 'webhook' | 'reminder';
/** what a row's CPU is counted in: the six services, nats-server and PostgreSQL */
const PARTS = [...CLUSTER_SERVICES, 'nats-server', 'PostgreSQL'] as const;
/** the services in the docs' order (the request's way in first) */
const SERVICES = ['gateway', ...CLUSTER_SERVICES.filter((n) => n !== 'gateway')] as const;
type Part = (typeof PARTS)[number];

/** The loopback receiver of the webhook endpoint and the HTTP Alert channel: counts what arrives. */
async function startReceiver() {
  const arrived = { hook: 0, alert: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      if (req.url === '/hook') arrived.hook++;
      if (req.url === '/alert') arrived.alert++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, arrived, close: () => server.close() };
}

/** `count` requests from C callers at once; the statuses that were not `expected` (counted). */
async function drive(count: number, request: (i: number) => Promise<Response>, expected: number): Promise<number> {
  let wrong = 0;
  await measure(count, C, async (i) => {
    const res = await request(i).catch(() => undefined);
    await res?.arrayBuffer();
    if (res?.status !== expected) wrong++;
  });
  return wrong;
}

const json = (authorization: string) => ({ authorization, 'content-type': 'application/json' });

interface Window {
  ms: number;
  /** CPU ms per part over the window */
  cpu: Map<Part, number>;
}

const cluster: Cluster = await startCluster(
  { LOG_LEVEL: 'silent', OUTBOUND_ALLOW_LIST: '127.0.0.1', TOTP_ENCRYPTION_KEY: 'cd'.repeat(32) },
  { pgSettings: BENCH_PG_SETTINGS },
);
const receiver = await startReceiver();
let replica: Replica | undefined;
let baseline: { pid: number; stop(): Promise<void> } | undefined;
try {
  await cluster.ready(300_000);
  const pool = createPool(cluster.databaseUrl, log);
  const users: string[] = [];
  for (let i = 0; i < USERS; i++) users.push((await createUserWithApiKey(pool)).authorization);
  // as many users with one endpoint each as plain users: the same creates, a delivery more
  const hookUsers: string[] = [];
  for (let i = 0; i < USERS; i++) hookUsers.push((await createUserWithApiKey(pool)).authorization);
  const alertUser = (await createUserWithApiKey(pool)).authorization;
  await pool.end();
  const setup = async (authorization: string, path: string, method: string, body: unknown) => {
    const res = await fetch(`${cluster.url}${path}`, { method, headers: json(authorization), body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  };
  for (const u of hookUsers) await setup(u, '/api/settings/webhooks', 'POST', { url: `${receiver.url}/hook`, secret: 'sizing-bench-secret-0123456789' });
  await setup(alertUser, '/api/settings/notification-channels/http-alert', 'PUT', { config: { url: `${receiver.url}/alert` } });

  const pids = (): Map<Part, number[]> =>
    new Map<Part, number[]>([
      ...CLUSTER_SERVICES.map((n): [Part, number[]] => [n, [cluster.pid(n)!, ...(n === 'tasks' && replica ? [replica.pid] : [])]]),
      ['nats-server', [cluster.natsPid()!]],
    ]);
  const cpuNow = (): Map<Part, number> => {
    const m = new Map<Part, number>([...pids()].map(([k, ps]) => [k, ps.reduce((a, p) => a + pidCpuMs(p), 0)]));
    m.set('PostgreSQL', postgresCpuMs(cluster.postgresDataDir));
    return m;
  };
  const since = (t0: number, c0: Map<Part, number>): Window => {
    const c1 = cpuNow();
    return { ms: performance.now() - t0, cpu: new Map(PARTS.map((p) => [p, c1.get(p)! - c0.get(p)!])) };
  };
  const serviceCpu = (c: Map<Part, number>) => CLUSTER_SERVICES.reduce((a, n) => a + c.get(n)!, 0);
  /** per operation, a process's figure after the idle subtraction, at least 0 (below is noise) */
  const sixPerOp = (c: Map<Part, number>) => CLUSTER_SERVICES.reduce((a, n) => a + Math.max(0, c.get(n)!), 0);

  // idle, before any load: the timers every process runs (outbox polls, heartbeats, health), once each
  // has handed back what start-up left (its one trim would otherwise count as idle CPU)
  await trimmedOnce(new Map(CLUSTER_SERVICES.map((n) => [n, cluster.metricsUrl(n)])));
  await new Promise((r) => setTimeout(r, 5_000));
  const i0 = cpuNow();
  const it0 = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idle = since(it0, i0);
  /** idle CPU ms of a part for a window of `ms` */
  const idleFor = (p: Part, ms: number) => (idle.cpu.get(p)! / idle.ms) * ms;

  const outbox = outboxWatch(cluster.databaseUrl);
  /** the outbox drained, then two 300 ms looks in a row in which the six did no more than idle work */
  const settled = async () => {
    await until(outbox.empty, 'the events published', 120_000);
    let quiet = 0;
    while (quiet < 2) {
      const c0 = cpuNow();
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 300));
      const w = since(t0, c0);
      quiet = serviceCpu(w.cpu) <= CLUSTER_SERVICES.reduce((a, n) => a + idleFor(n, w.ms), 0) + 20 ? quiet + 1 : 0;
    }
  };
  /** CPU per operation per part over `work` and what it left to do, idle subtracted */
  const measure = async (work: () => Promise<number>, done: () => Promise<void> = settled, count: () => number = () => N): Promise<{ perOp: Map<Part, number>; ops: number; wrong: number; ms: number; load: number }> => {
    const c0 = cpuNow();
    const t0 = performance.now();
    const result = await work();
    await done();
    const w = since(t0, c0);
    const ops = count();
    return { perOp: new Map(PARTS.map((p) => [p, (w.cpu.get(p)! - idleFor(p, w.ms)) / ops])), ops, wrong: result, ms: w.ms, load: loadavg()[0]! };
  };

  const created: { user: string; id: string }[] = [];
  const create = (authorization: string) => async (i: number) => {
    const res = await fetch(`${cluster.url}/api/tasks`, { method: 'POST', headers: json(authorization), body: JSON.stringify({ title: `sizing ${i}`, priority: 'NORMAL' }) });
    if (res.status === 201 && users.includes(authorization)) created.push({ user: authorization, id: ((await res.clone().json()) as { task: { id: string } }).task.id });
    return res;
  };
  const ofUsers = (i: number) => users[i % USERS]!;
  /** the i-th create, by the users in turn */
  const createByUsers = (i: number) => create(ofUsers(i))(i);
  const list = (i: number) => fetch(`${cluster.url}/api/tasks?limit=50`, { headers: { authorization: ofUsers(i) } });

  // warm-up, unmeasured: every path compiled and every key's identity cached
  await drive(200, createByUsers, 201);
  await drive(200, list, 200);
  await settled();
  created.length = 0;

  const rows = new Map<SizingOp, Awaited<ReturnType<typeof measure>>>();
  rows.set('create', await measure(() => drive(N, createByUsers, 201)));
  const createMs = rows.get('create')!.ms;
  rows.set('list', await measure(() => drive(N, list, 200)));
  const toComplete = created.slice(0, N);
  rows.set(
    'complete',
    await measure(
      () => drive(toComplete.length, (i) => fetch(`${cluster.url}/api/tasks/${toComplete[i]!.id}/complete`, { method: 'POST', headers: json(toComplete[i]!.user), body: '{}' }), 200),
      settled,
      () => toComplete.length,
    ),
  );

  // webhook delivery: the hook user's creates and one delivery each, minus the create
  const hooks0 = receiver.arrived.hook;
  const withHook = await measure(
    () => drive(N, (i) => create(hookUsers[i % USERS]!)(i), 201),
    async () => {
      await until(async () => receiver.arrived.hook - hooks0 >= N, `${N} webhook deliveries at the receiver`, 300_000);
      await settled();
    },
  );
  const c = rows.get('create')!;
  rows.set('webhook', { ...withHook, perOp: new Map(PARTS.map((p) => [p, withHook.perOp.get(p)! - c.perOp.get(p)!])) });

  // reminders: all due at one instant after they are created and armed; the window is their dispatch
  const at = new Date(Date.now() + 2 * createMs + 15_000).toISOString();
  await drive(N, (i) => fetch(`${cluster.url}/api/tasks`, { method: 'POST', headers: json(alertUser), body: JSON.stringify({ title: `reminder ${i}`, reminders: [{ at }] }) }), 201);
  const q = createPool(cluster.databaseUrl, log, { max: 1 });
  await until(async () => (await q.query<{ n: number }>('SELECT count(*)::int AS n FROM scheduler.reminder_queue WHERE handled_at IS NULL')).rows[0]!.n >= N, `${N} reminders armed`, 300_000);
  await q.end();
  await settled();
  // the window opens a second before they are due: the wait before is idle, and idle subtracted over a long wait is mostly noise
  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(at) - Date.now() - 1_000)));
  const alerts0 = receiver.arrived.alert;
  const reminder = await measure(
    async () => 0,
    async () => {
      await until(async () => receiver.arrived.alert >= N, `${N} reminders at the HTTP Alert channel`, 300_000);
      await settled();
    },
    // those delivered in the window (one due before it began would not be its cost)
    () => receiver.arrived.alert - alerts0,
  );
  rows.set('reminder', reminder);

  // the baseline: node:http + pg on the same PostgreSQL server, the cluster paused
  const baseDb = await createDatabase(cluster.databaseUrl, `sizing_baseline_${randomUUID().slice(0, 8)}`);
  const bp = createPool(baseDb, log);
  await migrate(bp, { ...tasksService.migrations!, log });
  await bp.end();
  const port = await freePort();
  baseline = serverProcess('bench/baseline-server.ts', { DATABASE_URL: baseDb, PORT: String(port), POOL_MAX: String(C) });
  const baseUrl = `http://127.0.0.1:${port}`;
  await serving(baseUrl, 'the baseline server', 30_000);
  const baseRows = new Map<'create' | 'list' | 'complete', { node: number; pg: number; load: number }>();
  const baseCreated: { user: string; id: string }[] = [];
  const baseCreate = async (i: number) => {
    const res = await fetch(`${baseUrl}/api/tasks`, { method: 'POST', headers: json(ofUsers(i)), body: JSON.stringify({ title: `sizing ${i}`, priority: 'NORMAL' }) });
    if (res.status === 201) baseCreated.push({ user: ofUsers(i), id: ((await res.clone().json()) as { task: { id: string } }).task.id });
    return res;
  };
  const baseList = (i: number) => fetch(`${baseUrl}/api/tasks?limit=50`, { headers: { authorization: ofUsers(i) } });
  signalPids(cluster.pids(), 'SIGSTOP');
  try {
    await drive(200, baseCreate, 201);
    await drive(200, baseList, 200);
    baseCreated.length = 0;
    const baseMeasure = async (op: 'create' | 'list' | 'complete', work: () => Promise<number>, ops: number) => {
      const n0 = pidCpuMs(baseline!.pid);
      const p0 = postgresCpuMs(cluster.postgresDataDir);
      await work();
      baseRows.set(op, { node: (pidCpuMs(baseline!.pid) - n0) / ops, pg: (postgresCpuMs(cluster.postgresDataDir) - p0) / ops, load: loadavg()[0]! });
    };
    await baseMeasure('create', () => drive(N, baseCreate, 201), N);
    await baseMeasure('list', () => drive(N, baseList, 200), N);
    const done = baseCreated.slice(0, N);
    await baseMeasure('complete', () => drive(done.length, (i) => fetch(`${baseUrl}/api/tasks/${done[i]!.id}/complete`, { method: 'POST', headers: json(done[i]!.user), body: '{}' }), 200), done.length);
  } finally {
    signalPids(cluster.pids(), 'SIGCONT');
  }
  await baseline.stop();
  baseline = undefined;

  const µs = (ms: number | undefined) => (ms === undefined ? '—' : Math.max(0, ms * 1000));
  const cpuRows = [...rows].map(([op, r]) => {
    const six = sixPerOp(r.perOp);
    const b = baseRows.get(op as 'create');
    return [
      op,
      ...SERVICES.map((n) => µs(r.perOp.get(n))),
      µs(six),
      µs(r.perOp.get('nats-server')),
      µs(r.perOp.get('PostgreSQL')),
      µs(b?.node),
      µs(b?.pg),
      b ? (six / b.node).toFixed(2) : '—',
      `${r.ops}${r.wrong ? ` (${r.wrong} not 2xx)` : ''}`,
      r.load,
    ];
  });
  emitRows(
    `CPU µs per operation per process, distributed (six service processes, nats-server, one PostgreSQL; ${C} callers at once, ${USERS} users): utime + stime from /proc over the window from the first request until the work it caused was done (outbox drained, deliveries arrived, every process quiet), minus each process's idle CPU for a window of the same length (measured over ${IDLE_MS / 1000} s first), per operation. webhook = a create of a user with one endpoint on a loopback receiver minus a create (what the delivery adds); reminder = the dispatch alone (scheduler → tasks → notifier → HTTP Alert channel on the loopback receiver), per reminder delivered. Baseline: node:http + pg (tools/bench/baseline-server.ts, one statement per operation) on the same PostgreSQL server in the same run, the cluster paused; deliveries have none (read them against the create). A figure below 0 after the idle subtraction (noise) is shown, and summed, as 0`,
    ['operation', ...SERVICES, 'six together', 'nats-server', 'PostgreSQL', 'baseline node', 'baseline PostgreSQL', 'six ÷ baseline node', 'operations', 'load avg'],
    cpuRows,
  );

  // Two tasks replicas behind the one gateway, against one measured just before (the same table
  // sizes). Each side takes REPLICA_WINDOWS windows per operation, creates and lists in turn, and
  // reads as their median with the range beside it: one window apiece let a noisy second of the
  // machine decide the ratio (quiet runs read 1.25x and 2.00x).
  const ops = [
    ['create', 'tasks.http.create', () => drive(N, createByUsers, 201)],
    ['list', 'tasks.http.list', () => drive(N, list, 200)],
  ] as const;
  const metricsUrls = () => [cluster.metricsUrl('tasks'), ...(replica ? [replica.metricsUrl] : [])];
  const handled = async (subject: string) => Promise.all(metricsUrls().map(async (u) => value(await scrape(u), 'tasksvc_bus_handler_duration_seconds_count', { subject })));
  /** per operation, over the windows: the tasks processes' CPU per request (`tasksOf` a window), all six's, requests each replica handled, the load */
  const windows = async (tasksOf: (r: Awaited<ReturnType<typeof measure>>) => number) => {
    const seen = new Map<'create' | 'list', { perOp: number[]; six: number[]; handled: number[][]; load: number[] }>(ops.map(([op]) => [op, { perOp: [], six: [], handled: [], load: [] }]));
    for (let w = 0; w < REPLICA_WINDOWS; w++) {
      for (const [op, subject, work] of ops) {
        const h0 = await handled(subject);
        const r = await measure(work);
        const h1 = await handled(subject);
        const tasks = tasksOf(r);
        const o = seen.get(op)!;
        o.perOp.push(tasks);
        o.six.push(sixPerOp(new Map([...r.perOp, ['tasks', tasks]])));
        o.handled.push(h1.map((h, k) => h - h0[k]!));
        o.load.push(r.load);
      }
    }
    return seen;
  };
  const one = await windows((r) => r.perOp.get('tasks')!);
  replica = await cluster.startReplica('tasks');
  await until(async () => (await fetch(replica!.metricsUrl.replace(/\/metrics$/, '/health')).catch(() => undefined))?.status === 200, 'the second tasks replica ready', 120_000);
  // The new process's warm-up, as long as the first one's: a fresh tasks process spends 1.5-1.7x its
  // later CPU per create over its first ~500 creates and still ~1.3x over the next thousand or two
  // (V8 compiling the hot paths; tools/bench/replica-probe.ts, a restarted single replica too). With
  // 100 creates of warm-up that was part of what read as "two replicas cost 1.86x one".
  await drive(4 * N, createByUsers, 201);
  await drive(2 * N, list, 200);
  await settled();
  // the second replica idles like the first: its idle CPU is the tasks figure once more
  const two = await windows((r) => r.perOp.get('tasks')! - idleFor('tasks', r.ms) / r.ops);
  const f = (ms: number) => fmt(Math.max(0, ms * 1000));
  const spread = (xs: number[]) => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
  const replicaRows: (string | number)[][] = [];
  for (const [op] of ops) {
    const [a, b] = [one.get(op)!, two.get(op)!];
    const handledSum = (k: number) => b.handled.reduce((acc, h) => acc + (h[k] ?? 0), 0);
    replicaRows.push([op, 'one replica', `${N} × ${REPLICA_WINDOWS}`, spread(a.perOp), spread(a.six), '', a.load.map((l) => l.toFixed(1)).join(', ')]);
    replicaRows.push([op, 'two replicas', `${handledSum(0)} + ${handledSum(1)}`, spread(b.perOp), spread(b.six), (median(b.perOp) / median(a.perOp)).toFixed(2), b.load.map((l) => l.toFixed(1)).join(', ')]);
  }
  emitRows(
    `Two tasks replicas behind one gateway: a second tasks process on the same NATS queue group (as a Deployment with replicas: 2), ${REPLICA_WINDOWS} windows of ${N} creates and of ${N} lists per side, in turn; requests handled by each replica over them (its own bus handler histogram), CPU µs per request of the tasks processes together and of all services, idle subtracted as above (the second replica's idle taken as the first's): the median of the windows, their range in brackets; the ratio is of the medians`,
    ['operation', 'tasks', 'handled (first + second)', 'tasks CPU µs / request', 'six together µs / request', 'tasks × one replica', 'load avg per window'],
    replicaRows,
  );
  await outbox.end();
} finally {
  await baseline?.stop();
  signalPids(cluster.pids(), 'SIGCONT');
  await cluster.stop();
  receiver.close();
}
