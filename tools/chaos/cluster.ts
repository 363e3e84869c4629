import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, createLogger, createNatsBus, freePort, startLocalPostgres, STANDALONE_ENV, STANDALONE_NODE_FLAGS, type Bus, type LocalPostgres, type LocalPostgresOptions } from '@tasksvc/runtime';
import { AppError, pingRpc, type ServiceName } from '@tasksvc/proto';
import { startNats, type LocalNats } from '../testenv/nats.ts';
import { until } from '../testenv/wait.ts';

const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');

export const CLUSTER_SERVICES: ServiceName[] = ['auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'gateway'];

/** An extra process of a service (Cluster.startReplica). */
export interface Replica {
  pid: number;
  metricsUrl: string;
  /** its stdout and stderr so far (the last 20 kB) */
  output(): string;
  /** its exit code or signal once it has exited, else undefined */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  kill(): Promise<void>;
}

interface Proc {
  child: ChildProcess;
  output: string;
}

/**
 * The distributed system for reliability tests: its own PostgreSQL and nats-server (so they can be
 * stopped), and every service as its own OS process that can be SIGKILLed and restarted.
 */
export interface Cluster {
  url: string;
  databaseUrl: string;
  natsUrl: string;
  /** nats-server's process id and PostgreSQL's data folder (for CPU accounting in benchmarks) */
  natsPid(): number | undefined;
  postgresDataDir: string;
  env: Record<string, string>;
  /** SIGKILL a service's process; resolves once nats-server no longer routes requests to it */
  kill(name: ServiceName): Promise<void>;
  /** SIGTERM a service's process (a clean stop, as a rolling upgrade does) and wait for its exit */
  terminate(name: ServiceName): Promise<void>;
  /** start a service; `sourceRoot` switches which checkout's services/<name>/src/main.ts runs (kept for later starts) */
  start(name: ServiceName, sourceRoot?: string): Promise<void>;
  /**
   * Another process of a service beside the first (a second replica: same environment, same NATS
   * queue group), on a probe/metrics port of its own; `prefix` runs before node (e.g. a shell that
   * enters a cgroup and execs it). Stopped with the cluster.
   */
  startReplica(name: ServiceName, opts?: { prefix?: string[] }): Promise<Replica>;
  restartNats(): Promise<void>;
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  /** wait until /api/health is 200 and every service answers its ping */
  ready(timeoutMs?: number): Promise<void>;
  output(name: ServiceName): string;
  /** the service processes' pids (for CPU accounting in benchmarks) */
  pids(): number[];
  /** one service's process id (undefined before it started) */
  pid(name: ServiceName): number | undefined;
  /** where a service process serves its Prometheus metrics (HEALTH_PORT; the gateway's METRICS_PORT) */
  metricsUrl(name: ServiceName): string;
  stop(): Promise<void>;
}

/**
 * `nodeFlags`: what each service's node starts with (as in the images by default; tools/bench/gc.ts
 * compares others); `pgSettings`: extra settings of its PostgreSQL server (the benches').
 */
export async function startCluster(extraEnv: Record<string, string> = {}, opts: { nodeFlags?: readonly string[]; /** per service, the checkout (with its own node_modules) whose source runs; default this one (the mixed-version test runs an older release's) */ sourceRoots?: Partial<Record<ServiceName, string>>; pgSettings?: string[]; /** per service, the file node runs instead of its source's main.ts, replicas included (a precompiled bundle: tools/bench/footprint.ts, tools/chaos/memory-limit.test.ts) */ entries?: Partial<Record<ServiceName, string>>; /** which PostgreSQL and how (the benches' --pg defaults) */ pg?: Partial<Pick<LocalPostgresOptions, 'binaries' | 'durable' | 'settings'>> } = {}): Promise<Cluster> {
  const nodeFlags = opts.nodeFlags ?? STANDALONE_NODE_FLAGS;
  const log = createLogger('chaos', 'silent');
  const dir = mkdtempSync(join(tmpdir(), 'chaos-'));
  const pgPort = await freePort();
  let pg: LocalPostgres = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, port: pgPort, ...opts.pg, settings: opts.pgSettings ?? opts.pg?.settings });
  const nats: LocalNats = await startNats({ storeDir: join(dir, 'nats') });
  const databaseUrl = await createDatabase(pg.url, 'chaos');
  const port = await freePort();
  const env: Record<string, string> = {
    RATE_LIMIT_WRITES: 'false', // writers create tasks as fast as they can
    PATH: process.env.PATH ?? '',
    DATABASE_URL: databaseUrl,
    NATS_URL: nats.url,
    AUTH_SECRET: 'chaos-secret-chaos-secret-chaos-secret-00',
    AUTH_TRUST_HOST: 'true',
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RUNTIME_ENV: 'test',
    DISABLE_UPDATE_CHECK: 'true',
    SECRETS_KEYRING: `chaos:${'c5'.repeat(32)}`,
    ...STANDALONE_ENV, // as the images run them
    ...extraEnv,
  };
  const procs = new Map<ServiceName, Proc>();
  // each process its own probe/metrics port, kept across restarts
  const metricsPorts = new Map<ServiceName, number>();
  for (const name of CLUSTER_SERVICES) metricsPorts.set(name, await freePort());

  const sourceRoots = new Map<ServiceName, string>(Object.entries(opts.sourceRoots ?? {}) as [ServiceName, string][]);
  const start = async (name: ServiceName, sourceRoot?: string) => {
    if (sourceRoot) sourceRoots.set(name, sourceRoot);
    const from = sourceRoots.get(name) ?? root;
    const own = { [name === 'gateway' ? 'METRICS_PORT' : 'HEALTH_PORT']: String(metricsPorts.get(name)) };
    const entry = opts.entries?.[name] ?? join(from, 'services', name, 'src', 'main.ts');
    const child = spawn(node, [...nodeFlags, entry], { cwd: from, env: { ...env, ...own }, stdio: ['ignore', 'pipe', 'pipe'] });
    const proc: Proc = { child, output: procs.get(name)?.output ?? '' };
    const append = (d: Buffer) => {
      proc.output = (proc.output + d.toString()).slice(-20_000);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    procs.set(name, proc);
  };

  const replicas: Replica[] = [];
  const startReplica = async (name: ServiceName, o: { prefix?: string[] } = {}): Promise<Replica> => {
    const port = await freePort();
    const own = { [name === 'gateway' ? 'METRICS_PORT' : 'HEALTH_PORT']: String(port) };
    const args = [node, ...nodeFlags, opts.entries?.[name] ?? join(root, 'services', name, 'src', 'main.ts')];
    const [cmd, ...rest] = [...(o.prefix ?? []), ...args];
    const child = spawn(cmd!, rest, { cwd: root, env: { ...env, ...own }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const append = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const exited = new Promise<void>((r) => child.once('exit', (code, sig) => ((exit = { code, signal: sig }), r())));
    const replica: Replica = {
      pid: child.pid!,
      metricsUrl: `http://127.0.0.1:${port}/metrics`,
      output: () => output,
      exited: () => exit,
      async kill() {
        if (!exit) child.kill('SIGKILL');
        await exited;
      },
    };
    replicas.push(replica);
    return replica;
  };

  const signal = async (name: ServiceName, sig: 'SIGKILL' | 'SIGTERM') => {
    const p = procs.get(name);
    if (!p || p.child.exitCode !== null || p.child.signalCode) return;
    const exited = new Promise((r) => p.child.once('exit', r));
    p.child.kill(sig);
    await exited;
  };
  const sigkill = (name: ServiceName) => signal(name, 'SIGKILL');

  // a bus of the test's own, to see what the NATS server routes
  let observer: Promise<Bus> | undefined;
  /**
   * The kernel closes a SIGKILLed process's socket at once, but nats-server notices and drops its
   * subscriptions a moment later; until then requests are still routed there and time out. A kill is
   * complete when nats-server answers "no responders" for the service.
   */
  const kill = async (name: ServiceName) => {
    await sigkill(name);
    observer ??= createNatsBus({ servers: nats.url, name: 'cluster-observer', log });
    const bus = await observer;
    const unrouted = () =>
      bus.request(pingRpc(name), {}, { timeoutMs: 500 }).then(
        () => false,
        (err: unknown) => err instanceof AppError && err.code === 'SERVICE_UNAVAILABLE',
      );
    await until(unrouted, `nats-server to stop routing ${name}'s requests after its process was killed`, 15_000);
  };

  const url = `http://127.0.0.1:${port}`;
  const ready = async (timeoutMs = 60_000) => {
    const end = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < end) {
      try {
        const h = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2_000) });
        const s = (await (await fetch(`${url}/api/health/services`, { signal: AbortSignal.timeout(3_000) })).json()) as Record<string, { up: boolean }>;
        last = `health ${h.status}, services ${JSON.stringify(s)}`;
        if (h.status === 200 && CLUSTER_SERVICES.every((n) => s[n]?.up)) return;
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const down = CLUSTER_SERVICES.map((n) => `--- ${n} (exit ${procs.get(n)?.child.exitCode ?? 'running'}) ---\n${(procs.get(n)?.output ?? '').slice(-1_500)}`).join('\n');
    throw new Error(`cluster not ready: ${last}\n${down}`);
  };

  for (const name of CLUSTER_SERVICES) await start(name);

  return {
    url,
    databaseUrl,
    natsUrl: nats.url,
    natsPid: () => nats.pid(),
    postgresDataDir: join(dir, 'pg'),
    env,
    kill,
    terminate: (name) => signal(name, 'SIGTERM'),
    start,
    startReplica,
    ready,
    restartNats: () => nats.restart(),
    stopPostgres: () => pg.stop(),
    async startPostgres() {
      pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log, port: pgPort, ...opts.pg, settings: opts.pgSettings ?? opts.pg?.settings });
    },
    output: (name) => procs.get(name)?.output ?? '',
    pids: () => [...procs.values()].map((p) => p.child.pid!).filter(Boolean),
    pid: (name) => procs.get(name)?.child.pid,
    metricsUrl: (name) => `http://127.0.0.1:${metricsPorts.get(name)}/metrics`,
    async stop() {
      for (const r of replicas) await r.kill();
      for (const name of procs.keys()) await sigkill(name);
      await (await observer)?.close();
      await nats.stop();
      await pg.stop();
    },
  };
}
