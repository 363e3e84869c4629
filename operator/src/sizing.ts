/**
 * Sizing of the six services (docs/kubernetes.md "Sizing"), the one place these numbers live: the
 * per-pod resources a TaskService gets by default (operator/src/crd.ts puts them in the CRD schema as
 * spec.resources' defaults, and the chart's crds/ file is generated from it), the figures measured by
 * tools/bench/footprint.ts (memory, start) and tools/bench/sizing.ts (CPU per operation), and the cores
 * and replicas a request rate needs. The docs table is rendered from here by `sizingTable()` (written
 * by `node tools/k8s/gen-sizing.ts`); tools/k8s/chart.test.ts checks the chart's CRD and the docs
 * against this module, tools/chaos/memory-limit.test.ts runs the tasks service under the memory limit.
 */
import type { ServiceName } from './crd.ts';

/**
 * Per pod, request = limit (Guaranteed QoS): the spec's example orchestration resources (512Mi memory,
 * 500m CPU per pod), which the measurements bear out. The images run esbuild bundles (Dockerfile
 * `bundle` stage), so the memory comes from the bundled processes (MEASURED): the largest peak under
 * the bench's load is the tasks service's 236 MB, 44 % of 512Mi (537 MB; 59 % of 384Mi, the lowest
 * common limit that keeps the old 60 % rule), the gateway's 186 MB (35 %), the other four 116–121 MB
 * (23 %). The rest is headroom for the biggest transient, an export or import
 * of a large account (the export streams: a 100,000-task export peaked 34 MiB above idle,
 * docs/benchmarks.md "export"; an import file is at most 16 MiB, 64 MiB unpacked, 50,000 items) and
 * for a busier replica than the bench's. In a memory cgroup of this limit the bundled tasks service
 * goes through the bench's load without an OOM kill (tools/chaos/memory-limit.test.ts prints its
 * peak). Installations short of memory can set 384Mi (spec.resources); auth, notifier, webhook and
 * scheduler can go lower per service (spec.serviceResources).
 */
export const POD_RESOURCES = { memory: '512Mi', cpu: '500m' } as const;
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
 * The bundled rows ("distributed (bundled)": the processes the images run) of one run of
 * `node tools/bench/footprint.ts --starts 1` (docs/benchmarks.md, section footprint, explains the
 * rows): memory after 8 s of creates then 8 s of lists from 10 connections, and one restart's
 * spawn → ready. The machine was shared and loaded (load average 22 during the memory rows, 15–16
 * during the start rows, on 2 cores): start times are upper figures. The tasks service's loaded RSS
 * is above its from-source figure in the same run (199 MB): bundled, the system answered the load
 * faster (gateway mean 11 ms per create instead of 104 ms), so tasks handled more of it.
 */
export const MEASURED: { at: string; command: string; loadAverage: string; services: Record<ServiceName, MeasuredService> } = {
  at: '2026-12-06T20:47:13Z',
  command: 'node tools/bench/footprint.ts --starts 1 (bundled rows)',
  loadAverage: '22 (memory), 15–16 (start) on 2 cores',
  services: {
    gateway: { rssIdleMb: 132, rssLoadedMb: 168, rssPeakMb: 186, readyMs: 470 },
    auth: { rssIdleMb: 112, rssLoadedMb: 120, rssPeakMb: 120, readyMs: 645 },
    tasks: { rssIdleMb: 115, rssLoadedMb: 236, rssPeakMb: 236, readyMs: 369 },
    notifier: { rssIdleMb: 115, rssLoadedMb: 116, rssPeakMb: 116, readyMs: 532 },
    webhook: { rssIdleMb: 112, rssLoadedMb: 121, rssPeakMb: 121, readyMs: 484 },
    scheduler: { rssIdleMb: 109, rssLoadedMb: 119, rssPeakMb: 119, readyMs: 404 },
  },
};

/** The operations a deployment's load is made of, as tools/bench/sizing.ts measures them. */
export const OPERATIONS = ['create', 'list', 'complete', 'webhook', 'reminder'] as const;
export type Operation = (typeof OPERATIONS)[number];
/** What the CPU is counted in besides the services: sized apart (the operator's NATS; PostgreSQL is the admin's). */
export type SharedPart = 'nats-server' | 'PostgreSQL';

/**
 * One run of `npm run bench -- sizing` (docs/benchmarks.md, section sizing): CPU µs per operation in
 * each process, idle subtracted; `webhook` is what one delivery adds to a create, `reminder` one
 * reminder's dispatch to an HTTP Alert channel. Taken on a shared, loaded machine: upper figures.
 */
export const MEASURED_CPU: { at: string; command: string; loadAverage: string; cpuUs: Record<ServiceName | SharedPart, Record<Operation, number>> } = {
  at: '2026-12-06T17:27:00Z',
  command: 'npm run bench -- sizing (1,000 operations of each, 10 callers, 20 users)',
  loadAverage: '34–51 on 2 cores',
  cpuUs: {
    gateway: { create: 658, list: 1200, complete: 1174, webhook: 59, reminder: 0 },
    auth: { create: 44, list: 64, complete: 194, webhook: 18, reminder: 0 },
    tasks: { create: 781, list: 1506, complete: 4937, webhook: 7, reminder: 194 },
    notifier: { create: 123, list: 0, complete: 113, webhook: 0, reminder: 3463 },
    webhook: { create: 202, list: 0, complete: 308, webhook: 907, reminder: 11 },
    scheduler: { create: 85, list: 0, complete: 196, webhook: 0, reminder: 196 },
    'nats-server': { create: 531, list: 508, complete: 1031, webhook: 0, reminder: 477 },
    PostgreSQL: { create: 839, list: 536, complete: 4780, webhook: 946, reminder: 1526 },
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

/** Replicas of one service for `rps` of MIX at POD_RESOURCES.cpu each: never fewer than the default two (a rollout or a lost node keeps one). */
export function replicasFor(svc: ServiceName, rps: number): number {
  return Math.max(DEFAULT_REPLICAS, Math.ceil(coresFor(svc, rps) / (cores(POD_RESOURCES.cpu) * TARGET_UTILISATION)));
}

const SERVICE_ORDER: ServiceName[] = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'];
const f0 = (n: number) => n.toFixed(0);
const f2 = (n: number) => (n < 0.01 ? '<0.01' : n.toFixed(2));

/** The docs' sizing table (Markdown), from the numbers above. */
export function sizingTable(): string {
  const header = [
    'service',
    'memory request = limit',
    'CPU request = limit',
    'RSS idle / loaded / peak (MB)',
    `CPU µs per ${OPERATIONS.join(' / ')}`,
    'CPU µs per request of the mix',
    'spawn → ready ms',
    ...RATES.map((r) => `${r} req/s: cores, replicas`),
  ];
  const cpu = (p: ServiceName | SharedPart) => [OPERATIONS.map((op) => f0(MEASURED_CPU.cpuUs[p][op])).join(' / '), f0(cpuUsPerRequest(p))];
  const rows = SERVICE_ORDER.map((s) => {
    const m = MEASURED.services[s];
    return [
      s,
      POD_RESOURCES.memory,
      POD_RESOURCES.cpu,
      `${f0(m.rssIdleMb)} / ${f0(m.rssLoadedMb)} / ${f0(m.rssPeakMb)}`,
      ...cpu(s),
      f0(m.readyMs),
      ...RATES.map((r) => `${f2(coresFor(s, r))}, ${replicasFor(s, r)}`),
    ];
  });
  // sized apart: the operator's NATS (docs "NATS"), the admin's PostgreSQL; cores only
  for (const p of ['nats-server', 'PostgreSQL'] as const) rows.push([p, '—', '—', '—', ...cpu(p), '—', ...RATES.map((r) => `${f2(coresFor(p, r))}, —`)]);
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
