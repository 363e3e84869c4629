/**
 * Sizing of the six services (docs/kubernetes.md "Sizing"), the one place these numbers live: the
 * per-pod resources a TaskService gets by default (operator/src/crd.ts puts them in the CRD schema as
 * spec.resources' defaults, and the chart's crds/ file is generated from it), the figures measured by
 * tools/bench/footprint.ts, and the replicas a request rate needs. The docs table is rendered from here
 * by `sizingTable()`; tools/k8s/chart.test.ts checks the chart's CRD and the docs against this module.
 */
import type { ServiceName } from './crd.ts';

/**
 * Per pod, request = limit (Guaranteed QoS): the spec's example orchestration resources (512Mi memory,
 * 500m CPU per pod). The measured peak of every service under the bench's load stays below about
 * 60 % of the memory (MEASURED: 316 MB for tasks, 230–265 MB for the others), the rest is headroom
 * for an export or an import of a large account.
 */
export const POD_RESOURCES = { memory: '512Mi', cpu: '500m' } as const;
export const DEFAULT_REPLICAS = 2;

export interface MeasuredService {
  /** resident memory 10 s after ready, after the create and list load, and its peak (MB) */
  rssIdleMb: number;
  rssLoadedMb: number;
  rssPeakMb: number;
  /** CPU per operation in this service's process, the events it published handled (µs) */
  cpuUsPerCreate: number;
  cpuUsPerList: number;
  /** spawn → readiness probe 200, a restart on a migrated database (ms) */
  readyMs: number;
}

/**
 * One run of `npm run bench -- footprint` (docs/benchmarks.md, section footprint). The machine was
 * shared and loaded (load average 25–31 on 2 cores): CPU time per operation is inflated by cache and
 * scheduler contention and start times by waiting for a core, so these are upper figures.
 */
export const MEASURED: { at: string; command: string; loadAverage: string; services: Record<ServiceName, MeasuredService> } = {
  at: '2026-12-06T13:32:51Z',
  command: 'npm run bench -- footprint',
  loadAverage: '25–31 on 2 cores',
  services: {
    gateway: { rssIdleMb: 202, rssLoadedMb: 239, rssPeakMb: 265, cpuUsPerCreate: 194, cpuUsPerList: 413, readyMs: 1924 },
    auth: { rssIdleMb: 212, rssLoadedMb: 198, rssPeakMb: 226, cpuUsPerCreate: 5.96, cpuUsPerList: 9.21, readyMs: 4162 },
    tasks: { rssIdleMb: 205, rssLoadedMb: 312, rssPeakMb: 316, cpuUsPerCreate: 236, cpuUsPerList: 627, readyMs: 6445 },
    notifier: { rssIdleMb: 197, rssLoadedMb: 197, rssPeakMb: 227, cpuUsPerCreate: 4.97, cpuUsPerList: 5.53, readyMs: 2760 },
    webhook: { rssIdleMb: 198, rssLoadedMb: 200, rssPeakMb: 226, cpuUsPerCreate: 45.7, cpuUsPerList: 11.1, readyMs: 3854 },
    scheduler: { rssIdleMb: 195, rssLoadedMb: 197, rssPeakMb: 228, cpuUsPerCreate: 30.8, cpuUsPerList: 7.37, readyMs: 2814 },
  },
};

/** The request mix the table is for: most requests of the web app and the API are reads. */
export const MIX = { create: 0.2, list: 0.8 } as const;
/** A replica is planned at this share of its CPU, leaving room for bursts, GC and a rollout's surge. */
export const TARGET_UTILISATION = 0.7;
/** The request rates the docs table is worked out for. */
export const RATES = [100, 1000, 3000] as const;

/** CPU cores in a Kubernetes quantity (`500m`, `2`). */
export function cores(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}

/** CPU cores one service needs for `rps` requests per second of MIX. */
export function coresFor(svc: ServiceName, rps: number): number {
  const m = MEASURED.services[svc];
  return (rps * (MIX.create * m.cpuUsPerCreate + MIX.list * m.cpuUsPerList)) / 1e6;
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
    'CPU µs per create / list',
    'spawn → ready ms',
    ...RATES.map((r) => `${r} req/s: cores, replicas`),
  ];
  const rows = SERVICE_ORDER.map((s) => {
    const m = MEASURED.services[s];
    return [
      s,
      POD_RESOURCES.memory,
      POD_RESOURCES.cpu,
      `${f0(m.rssIdleMb)} / ${f0(m.rssLoadedMb)} / ${f0(m.rssPeakMb)}`,
      `${f0(m.cpuUsPerCreate)} / ${f0(m.cpuUsPerList)}`,
      f0(m.readyMs),
      ...RATES.map((r) => `${f2(coresFor(s, r))}, ${replicasFor(s, r)}`),
    ];
  });
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
