/**
 * Sizing of the six services (docs/kubernetes.md "Sizing"), the one place these numbers live: the
 * per-pod limits and the per-service requests a TaskService gets by default (operator/src/desired.ts
 * renders them when neither spec.resources nor spec.serviceResources.<service> is set), the figures
 * measured by tools/bench/footprint.ts (memory, start) and tools/bench/sizing.ts (CPU per operation)
 * that the requests are derived from, and the cores and replicas a request rate needs. The docs table
 * is rendered from here by `sizingTable()` (written by `node tools/k8s/gen-sizing.ts`);
 * tools/k8s/chart.test.ts checks the chart's CRD, the operator's Deployments and the docs against this
 * module, tools/chaos/memory-limit.test.ts runs the tasks service under the memory limit.
 */
import type { ServiceName } from './crd.ts';

/**
 * Per pod, the limits: the spec's example orchestration resources (512Mi memory, 500m CPU per pod),
 * which the measurements bear out. The images run esbuild bundles (Dockerfile `bundle` stage), so the
 * memory comes from the bundled processes (MEASURED): the largest peak under the bench's load is the
 * tasks service's and the gateway's 134 MB, 26 % of 512Mi, the other four 96–105 MB (20 %); with the
 * earlier 16 MB semi-space tasks peaked at up to 236 MB (46 %). The rest is headroom for the biggest transient, an export or import of a large account (the
 * export streams: a 100,000-task export peaked 34 MiB above idle, docs/benchmarks.md "export"; an
 * import file is at most 16 MiB, 64 MiB unpacked, 50,000 items) and for a busier replica than the
 * bench's. In a memory cgroup of this limit the bundled tasks service goes through the bench's load
 * without an OOM kill (tools/chaos/memory-limit.test.ts prints its peak). spec.resources, when set,
 * is one pair for every pod as request = limit; what it leaves unset is taken from here.
 */
export const POD_LIMITS = { memory: '512Mi', cpu: '500m' } as const;
export const DEFAULT_REPLICAS = 2;

export interface MeasuredService {
  /** resident memory 10 s after ready, after the create and list load, and its peak (MB) */
  rssIdleMb: number;
  rssLoadedMb: number;
  rssPeakMb: number;
  /** spawn → readiness probe 200, a restart on a migrated database (ms) */
  readyMs: number;
}

/**
 * The bundled rows ("distributed (bundled)": the processes the images run, with their flags) of
 * `npm run bench -- footprint` (docs/benchmarks.md, section footprint, explains the rows) on a quiet
 * machine: memory after 8 s of creates then 8 s of lists from 10 connections, and spawn → ready, the
 * median of 3 restarts on a migrated database.
 */
export const MEASURED: { at: string; command: string; loadAverage: string; services: Record<ServiceName, MeasuredService> } = {
  at: '2026-12-07T13:26:00Z',
  command: 'npm run bench (full run, 12:52-13:53 UTC), its footprint bench (bundled rows)',
  loadAverage: '2.4–4.3 (the bench\'s own) on 2 cores',
  services: {
    gateway: { rssIdleMb: 105, rssLoadedMb: 134, rssPeakMb: 134, readyMs: 750 },
    auth: { rssIdleMb: 94.3, rssLoadedMb: 106, rssPeakMb: 106, readyMs: 509 },
    tasks: { rssIdleMb: 94.6, rssLoadedMb: 136, rssPeakMb: 136, readyMs: 569 },
    notifier: { rssIdleMb: 93.9, rssLoadedMb: 94.1, rssPeakMb: 94.1, readyMs: 583 },
    webhook: { rssIdleMb: 96.9, rssLoadedMb: 103, rssPeakMb: 103, readyMs: 635 },
    scheduler: { rssIdleMb: 94.5, rssLoadedMb: 99.2, rssPeakMb: 99.2, readyMs: 535 },
  },
};

/** The operations a deployment's load is made of, as tools/bench/sizing.ts measures them. */
export const OPERATIONS = ['create', 'list', 'complete', 'webhook', 'reminder'] as const;
export type Operation = (typeof OPERATIONS)[number];
/** What the CPU is counted in besides the services: sized apart (the operator's NATS; PostgreSQL is the admin's). */
export type SharedPart = 'nats-server' | 'PostgreSQL';

/**
 * The sizing bench of one full `npm run bench` (docs/benchmarks.md, section sizing): CPU µs per
 * operation in each process, idle subtracted; `webhook` is what one delivery adds to a create,
 * `reminder` one reminder's dispatch to an HTTP Alert channel. Taken on a quiet machine (the bench's
 * own load only), the services run from source; a figure the idle subtraction took below 0 is noise
 * and counts 0 (auth answers from its 60 s caches). Quiet runs on this machine differ by up to a half:
 * the six read 795, 1,076 and (this one) 1,450 µs per create, and this run's bare baseline was as slow
 * against the 11:32 run's (640 µs per create against 280): the machine, not the code, so the figures here are the highest.
 */
export const MEASURED_CPU: { at: string; command: string; loadAverage: string; cpuUs: Record<ServiceName | SharedPart, Record<Operation, number>> } = {
  at: '2026-12-07T13:29:00Z',
  command: 'npm run bench (full run), its sizing bench (1,000 operations of each, 10 callers, 20 users)',
  loadAverage: '2.3–2.9 on 2 cores',
  cpuUs: {
    gateway: { create: 658, list: 907, complete: 605, webhook: 0, reminder: 0 },
    auth: { create: 5, list: 0, complete: 0, webhook: 0, reminder: 0 },
    tasks: { create: 580, list: 1358, complete: 1871, webhook: 0, reminder: 223 },
    notifier: { create: 0, list: 4, complete: 130, webhook: 19, reminder: 2252 },
    webhook: { create: 153, list: 0, complete: 286, webhook: 719, reminder: 0 },
    scheduler: { create: 55, list: 0, complete: 120, webhook: 9, reminder: 152 },
    'nats-server': { create: 250, list: 348, complete: 451, webhook: 29, reminder: 243 },
    PostgreSQL: { create: 435, list: 434, complete: 2740, webhook: 679, reminder: 882 },
  },
};

/**
 * The mix the table is for, as shares of the request rate (summing to 1): most requests of the web
 * app and the API are reads; a task is created and later completed; some writes go to a webhook
 * endpoint and a few tasks carry a reminder. Deliveries count in the rate as requests do.
 */
export const MIX: Record<Operation, number> = { list: 0.7, create: 0.15, complete: 0.1, webhook: 0.03, reminder: 0.02 };
/** A replica is planned at this share of its CPU, leaving room for bursts, GC and a rollout's surge. */
export const TARGET_UTILISATION = 0.7;
/** The request rates the docs table is worked out for. */
export const RATES = [100, 1000, 3000] as const;

/** CPU cores in a Kubernetes quantity (`500m`, `2`). */
export function cores(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}

/** Bytes in a Kubernetes memory quantity (`512Mi`, `1Gi`, `300M`, `1000`). */
export function bytes(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!m) throw new Error(`not a memory quantity: ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Math.round(Number(m[1]) * unit);
}

/** CPU µs one request of MIX costs in a process, on average. */
export function cpuUsPerRequest(part: ServiceName | SharedPart): number {
  return OPERATIONS.reduce((a, op) => a + MIX[op] * MEASURED_CPU.cpuUs[part][op], 0);
}

/** CPU cores one process kind needs for `rps` requests per second of MIX: rps × Σ share × µs ÷ 10⁶. */
export function coresFor(part: ServiceName | SharedPart, rps: number): number {
  return (rps * cpuUsPerRequest(part)) / 1e6;
}

/** Replicas of one service for `rps` of MIX at the CPU limit each: never fewer than the default two (a rollout or a lost node keeps one). */
export function replicasFor(svc: ServiceName, rps: number): number {
  return Math.max(DEFAULT_REPLICAS, Math.ceil(coresFor(svc, rps) / (cores(POD_LIMITS.cpu) * TARGET_UTILISATION)));
}

/**
 * The default requests, per service, below the limits (Burstable QoS): the scheduler places pods by
 * their requests, so six services' worth of 512Mi/500m pairs (12 pods: 6 GiB, 6 cores) would need a
 * node far larger than their measured use; each pod can still use up to its limit where the node has it.
 *
 * Memory: the measured peak plus MEMORY_HEADROOM_MI, rounded up to MEMORY_STEP_MI. Under memory
 * pressure the kubelet evicts first the pods furthest above their requests, so a request that covers
 * what the pod was measured to hold keeps it out of the front of that queue. The headroom is about
 * twice the largest transient measured (a 100,000-task export, 34 MiB above idle).
 */
export const MEMORY_HEADROOM_MI = 64;
const MEMORY_STEP_MI = 64;
/**
 * CPU: the cores REQUEST_RATE requests/s of MIX take in one of the DEFAULT_REPLICAS replicas, planned at
 * TARGET_UTILISATION as the replicas column is, rounded up to CPU_STEP_M and at least MIN_CPU_REQUEST_M.
 * The floor is for start-up, not idle (a service idles at 0.02–0.17 % of a core, docs/benchmarks.md
 * "idle"): a bundled service spends 0.3–0.5 s of CPU to ready, at most 10 s at 50m on a node
 * with no spare CPU, well within the liveness probe's 70 s.
 */
export const REQUEST_RATE = RATES[0];
export const MIN_CPU_REQUEST_M = 50;
const CPU_STEP_M = 25;

/** The footprint bench's MB are thousands of /proc's kB, which are KiB. */
const mbToMi = (mb: number) => (mb * 1000) / 1024;
const roundUp = (n: number, step: number) => Math.ceil(n / step) * step;

/** A service's default requests, from MEASURED and MEASURED_CPU; never above the limits. */
export function defaultRequests(svc: ServiceName): { memory: string; cpu: string } {
  const memoryMi = roundUp(mbToMi(MEASURED.services[svc].rssPeakMb) + MEMORY_HEADROOM_MI, MEMORY_STEP_MI);
  const cpuM = Math.max(MIN_CPU_REQUEST_M, roundUp((coresFor(svc, REQUEST_RATE) / DEFAULT_REPLICAS / TARGET_UTILISATION) * 1000, CPU_STEP_M));
  return {
    memory: `${Math.min(memoryMi, bytes(POD_LIMITS.memory) / 2 ** 20)}Mi`,
    cpu: `${Math.min(cpuM, cores(POD_LIMITS.cpu) * 1000)}m`,
  };
}

/** The ResourceRequirements a service's pods get when the TaskService sets none for it. */
export function defaultResources(svc: ServiceName): { requests: { memory: string; cpu: string }; limits: { memory: string; cpu: string } } {
  return { requests: defaultRequests(svc), limits: { ...POD_LIMITS } };
}

const SERVICE_ORDER: ServiceName[] = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'];
const f0 = (n: number) => n.toFixed(0);
const f2 = (n: number) => (n < 0.01 ? '<0.01' : n.toFixed(2));

/** The docs' sizing table (Markdown), from the numbers above. */
export function sizingTable(): string {
  const header = [
    'service',
    'memory request / limit',
    'CPU request / limit',
    'RSS idle / loaded / peak (MB)',
    `CPU µs per ${OPERATIONS.join(' / ')}`,
    'CPU µs per request of the mix',
    'spawn → ready ms',
    ...RATES.map((r) => `${r} req/s: cores, replicas`),
  ];
  const cpu = (p: ServiceName | SharedPart) => [OPERATIONS.map((op) => f0(MEASURED_CPU.cpuUs[p][op])).join(' / '), f0(cpuUsPerRequest(p))];
  const rows = SERVICE_ORDER.map((s) => {
    const m = MEASURED.services[s];
    const r = defaultResources(s);
    return [
      s,
      `${r.requests.memory} / ${r.limits.memory}`,
      `${r.requests.cpu} / ${r.limits.cpu}`,
      `${f0(m.rssIdleMb)} / ${f0(m.rssLoadedMb)} / ${f0(m.rssPeakMb)}`,
      ...cpu(s),
      f0(m.readyMs),
      ...RATES.map((r) => `${f2(coresFor(s, r))}, ${replicasFor(s, r)}`),
    ];
  });
  // sized apart: the operator's NATS (docs "NATS"), the admin's PostgreSQL; cores only
  // what a node must hold for the defaults: the scheduler adds up requests
  const pods = SERVICE_ORDER.length * DEFAULT_REPLICAS;
  const sum = (f: (s: ServiceName) => number) => SERVICE_ORDER.reduce((a, s) => a + f(s), 0) * DEFAULT_REPLICAS;
  const mi = (q: string) => bytes(q) / 2 ** 20;
  const milli = (q: string) => Math.round(cores(q) * 1000);
  rows.push([
    `all ${pods} pods (${DEFAULT_REPLICAS} of each)`,
    `${sum((s) => mi(defaultRequests(s).memory))}Mi / ${pods * mi(POD_LIMITS.memory)}Mi`,
    `${sum((s) => milli(defaultRequests(s).cpu))}m / ${pods * milli(POD_LIMITS.cpu)}m`,
    ...Array<string>(header.length - 3).fill('—'),
  ]);
  for (const p of ['nats-server', 'PostgreSQL'] as const) rows.push([p, '—', '—', '—', ...cpu(p), '—', ...RATES.map((r) => `${f2(coresFor(p, r))}, —`)]);
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
