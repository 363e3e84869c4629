/**
 * HTTP load against any deployment of the task service: autocannon (as a library) sends task
 * creates or lists with a rotating list of Bearer API keys, and the run reports req/s, p50/p99,
 * non-2xx answers, the CPU the server and PostgreSQL processes spent per 1,000 requests (from
 * /proc of the pids given; PostgreSQL backends are found as children of the postmaster pid, those of
 * databases other than the one in --pg-url left out), and
 * statements per request from pg_stat_statements when a database URL is given and the extension is
 * installed.
 *
 *   node_modules/.bin/node tools/bench/http-load.ts --url http://127.0.0.1:3000 --keys-file keys.txt \
 *     [--op create|list] [--seconds 20] [--connections 10] [--server-pids 123,124] [--pg-pid 99] [--pg-url postgres://…]
 */
import { readFileSync, readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { PPID, pidCpuMs, procStat } from './lib/cpu.ts';
import { percentile } from './lib/stats.ts';

/** Where an operation's requests go (another app's API): its path, and for a create its JSON body. */
export interface RequestShape {
  path: string;
  body?: string;
}

export interface LoadOptions {
  url: string;
  /** the operation's request when it is not ours (POST /api/tasks, GET /api/tasks?limit=50) */
  request?: RequestShape;
  keys: string[];
  op: 'create' | 'list';
  seconds: number;
  connections: number;
  /** requests per second over all connections (autocannon's overallRate); default: as fast as answered */
  rate?: number;
  /** processes whose CPU counts as the server's (e.g. every service process) */
  serverPids?: number[];
  /** the postmaster: its CPU and its children's (the backends) count as PostgreSQL's */
  pgPid?: number;
  /** for pg_stat_statements (statements per request) */
  pgUrl?: string;
}

export interface LoadResult {
  op: string;
  requests: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  serverCpuMsPer1k: number | null;
  pgCpuMsPer1k: number | null;
  statementsPerRequest: number | null;
  loadAverage: number;
}

/** A backend's process title: `postgres: [CLUSTER: ]USER DATABASE ADDRESS(PORT) STATE`. */
const BACKEND_TITLE = /^postgres: (?:\S+: )?\S+ (\S+) (?:\[local\]|\S+\(\d+\))/;

/**
 * The postmaster's children, without the backends of databases other than `database` (when given):
 * other systems sharing the server are not this one's cost. Its shared processes (WAL writer,
 * checkpointer, autovacuum) count.
 */
function childrenOf(pid: number, database?: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    if (Number(procStat(Number(name))?.[PPID]) !== pid) continue;
    try {
      const db = database && BACKEND_TITLE.exec(readFileSync(`/proc/${name}/cmdline`, 'utf8'))?.[1];
      if (!db || db === database) out.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** CPU per pid now, so that processes that exit during the run do not subtract. */
function snapshot(pids: number[]): Map<number, number> {
  return new Map(pids.map((p) => [p, pidCpuMs(p)]));
}
function spent(before: Map<number, number>, pids: number[]): number {
  let total = 0;
  for (const p of pids) total += Math.max(0, pidCpuMs(p) - (before.get(p) ?? 0));
  return total;
}

async function statementCalls(client: pg.Client | undefined): Promise<number | null> {
  if (!client) return null;
  try {
    // this database's statements only: other databases on the same server are not this deployment's
    const { rows } = await client.query<{ n: string }>(
      'SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())',
    );
    return Number(rows[0]!.n);
  } catch {
    return null; // not installed or not preloaded
  }
}

export async function httpLoad(o: LoadOptions): Promise<LoadResult> {
  if (o.keys.length === 0) throw new Error('at least one API key is needed');
  let next = 0;
  const body = o.request?.body ?? JSON.stringify({ title: 'load test task', priority: 'NORMAL' });
  const request =
    o.op === 'create'
      ? { method: 'POST' as const, path: o.request?.path ?? '/api/tasks', body, headers: { 'content-type': 'application/json' } }
      : { method: 'GET' as const, path: o.request?.path ?? '/api/tasks?limit=50' };
  const pgClient = o.pgUrl ? new pg.Client({ connectionString: o.pgUrl }) : undefined;
  await pgClient?.connect();
  const serverPids = o.serverPids ?? [];
  const database = o.pgUrl ? decodeURIComponent(new URL(o.pgUrl).pathname.slice(1)) : undefined;
  const pgPids = o.pgPid ? [o.pgPid, ...childrenOf(o.pgPid, database)] : [];
  try {
    const calls0 = await statementCalls(pgClient);
    const server0 = snapshot(serverPids);
    const pg0 = snapshot(pgPids);
    // autocannon's own histogram keeps whole milliseconds, a fifth of a 5 ms p99: the percentiles
    // come from every 2xx answer's time as measured (sub-millisecond), the same way for every system
    const latencies: number[] = [];
    let run!: autocannon.Instance;
    const done = new Promise<autocannon.Result>((resolve, reject) => {
      run = autocannon(
        {
          url: o.url,
          connections: o.connections,
          duration: o.seconds,
          ...(o.rate ? { overallRate: o.rate } : {}),
          requests: [
            {
              ...request,
              setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${o.keys[next++ % o.keys.length]}` } }),
            },
          ],
        },
        (err: Error | null, result) => (err ? reject(err) : resolve(result)),
      );
    });
    run.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    });
    const result = await done;
    latencies.sort((a, b) => a - b);
    const serverCpu = spent(server0, serverPids);
    // backends that started during the run count from zero
    const pgCpu = spent(pg0, o.pgPid ? [...new Set([...pgPids, ...childrenOf(o.pgPid, database)])] : []);
    const calls1 = await statementCalls(pgClient);
    const n = result.requests.total;
    const per1k = (ms: number) => (n > 0 ? (ms * 1000) / n : NaN);
    return {
      op: o.op,
      requests: n,
      reqPerSec: result.requests.average,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      serverCpuMsPer1k: serverPids.length ? per1k(serverCpu) : null,
      pgCpuMsPer1k: pgPids.length ? per1k(pgCpu) : null,
      // minus the one call that reads the counter
      statementsPerRequest: calls0 !== null && calls1 !== null && n > 0 ? (calls1 - calls0 - 1) / n : null,
      loadAverage: loadavg()[0]!,
    };
  } finally {
    await pgClient?.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      key: { type: 'string', multiple: true },
      'keys-file': { type: 'string' },
      op: { type: 'string', default: 'create' },
      seconds: { type: 'string', default: '20' },
      connections: { type: 'string', default: '10' },
      'server-pids': { type: 'string' },
      'pg-pid': { type: 'string' },
      'pg-url': { type: 'string' },
    },
  });
  const keys = [...(values.key ?? []), ...(values['keys-file'] ? readFileSync(values['keys-file'], 'utf8').split(/\s+/).filter(Boolean) : [])];
  const problems: string[] = [];
  if (!values.url) problems.push('--url: the base URL of the deployment, e.g. http://127.0.0.1:3000');
  if (keys.length === 0) problems.push('--key or --keys-file: at least one API key (ts_live_…)');
  if (values.op !== 'create' && values.op !== 'list') problems.push('--op: create or list');
  if (problems.length) {
    process.stderr.write(`http-load: ${problems.join('\n  ')}\n`);
    process.exit(2);
  }
  const r = await httpLoad({
    url: values.url!,
    keys,
    op: values.op as 'create' | 'list',
    seconds: Number(values.seconds),
    connections: Number(values.connections),
    serverPids: values['server-pids']?.split(',').map(Number),
    pgPid: values['pg-pid'] ? Number(values['pg-pid']) : undefined,
    pgUrl: values['pg-url'],
  });
  console.log(JSON.stringify(r, null, 2));
}
