/**
 * Wiring: informers on TaskServices and on every child kind feed `namespace/name` keys into one
 * deduping work queue; the reconciler handles them. Started only while this replica leads.
 */
import { KubernetesObjectApi, makeInformer, type Informer, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from './crd.ts';
import { CNPG_API_VERSION, MANAGED_BY, OWNER_NAME_LABEL, OWNER_NAMESPACE_LABEL, childName, type CronJobApiVersion } from './desired.ts';
import { checkKeys } from './keys.ts';
import type { TaskService } from './types.ts';
import { apiClient, createKubeClient, describeError, discoverCronJobApiVersion, discoverPdbApiVersion } from './kube.ts';
import { WorkQueue } from './queue.ts';
import { childKinds, createReconciler, gatewayHealthUrl } from './reconciler.ts';
import type { GatewayHealth } from './status.ts';

export interface ControllerOptions {
  log: Logger;
  /** deadline of every API request (watches excepted) */
  apiTimeoutMs: number;
  workers?: number;
  notReadyRecheckMs?: number;
  resyncMs?: number;
  /** namespaced mode: watch only these namespaces (WATCH_NAMESPACES); unset: every namespace */
  namespaces?: string[];
  /** how often the generated Secrets are compared with their recorded checksums (a lost Secret is noticed within this) */
  keyCheckMs?: number;
  /** told after every reconcile (metrics.ts) */
  onReconciled?: (outcome: 'ok' | 'error', seconds: number) => void;
  /** the gateway's /api/health for the Database condition (reconciler.ts); unset: not asked */
  gatewayHealth?: (url: string) => Promise<GatewayHealth | undefined>;
  /** how often the gateways' health is asked between reconciles (a database outage is noticed within this) */
  databaseCheckMs?: number;
}

export interface RunningController {
  cronJobApiVersion: CronJobApiVersion;
  /** the current work queue (a pause drops it; resume starts a new one) */
  readonly queue: WorkQueue;
  /**
   * Stop reconciling (leadership lost) but keep the informers and their caches: a leader back within
   * moments resumes without re-listing every kind.
   */
  pause(): Promise<void>;
  /** Reconcile again, every TaskService once from the kept caches. */
  resume(): void;
  /** why the controller is not working (a watch failing again and again), or undefined */
  problem(): string | undefined;
  stop(): Promise<void>;
}

/** The REST collection path of a kind in one namespace or across all, e.g. /apis/apps/v1/deployments. */
export const collectionPath = (apiVersion: string, plural: string, namespace?: string): string =>
  `${apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`}${namespace ? `/namespaces/${namespace}` : ''}/${plural}`;

const plurals: Record<string, string> = {
  ConfigMap: 'configmaps',
  Service: 'services',
  Deployment: 'deployments',
  DaemonSet: 'daemonsets',
  StatefulSet: 'statefulsets',
  Ingress: 'ingresses',
  CronJob: 'cronjobs',
  Cluster: 'clusters',
  PodDisruptionBudget: 'poddisruptionbudgets',
};

/** Consecutive watch failures after which the controller counts as not working. */
const FAILING_AFTER = 3;

interface Runner {
  stop(): Promise<void>;
  problem(): string | undefined;
}

/** Counts consecutive failures of one informer; a successful list (the informer's first step) resets it. */
class FailureCount {
  n = 0;
  last = '';
  /** wraps the informer's list function */
  list<T>(fn: () => Promise<T>): () => Promise<T> {
    return async () => {
      const r = await fn();
      this.n = 0;
      return r;
    };
  }
}

/** Restarts an informer with backoff: client-node's stops on any error but 410. */
function keepRunning(inf: Informer<KubernetesObject>, what: string, log: Logger, count: FailureCount): Runner {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  inf.on('error', (err: unknown) => {
    if (stopped) return;
    count.n++;
    count.last = describeError(err);
    const delay = Math.min(30_000, 500 * 2 ** Math.min(count.n, 6));
    log.warn({ what, err: describeError(err), retryInMs: delay }, 'watch failed; restarting');
    timer = setTimeout(() => {
      if (!stopped) inf.start().catch(() => undefined);
    }, delay);
  });
  return {
    problem: () => (count.n >= FAILING_AFTER ? `watch of ${what} failed ${count.n} times: ${count.last}` : undefined),
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inf.stop();
    },
  };
}

export async function startController(kc: KubeConfig, opts: ControllerOptions): Promise<RunningController> {
  const { log } = opts;
  const cronJobApiVersion = await discoverCronJobApiVersion(kc, opts.apiTimeoutMs);
  const pdbApiVersion = await discoverPdbApiVersion(kc, opts.apiTimeoutMs);
  log.info({ cronJobApiVersion, pdbApiVersion }, 'CronJob and PodDisruptionBudget APIs discovered');
  const client = createKubeClient(kc, opts.apiTimeoutMs);
  const reconcile = createReconciler({
    client,
    log,
    cronJobApiVersion,
    pdbApiVersion,
    notReadyRecheckMs: opts.notReadyRecheckMs,
    resyncMs: opts.resyncMs,
    namespaced: opts.namespaces !== undefined,
    gatewayHealth: opts.gatewayHealth,
  });
  const newQueue = () => new WorkQueue(
    async (key) => {
      log.debug({ key }, 'reconcile');
      const t0 = performance.now();
      try {
        const result = await reconcile(key);
        opts.onReconciled?.('ok', (performance.now() - t0) / 1000);
        return result;
      } catch (err) {
        opts.onReconciled?.('error', (performance.now() - t0) / 1000);
        throw err;
      }
    },
    { workers: opts.workers ?? 2, onError: (key, err, attempt) => log.warn({ key, attempt, err: describeError(err) }, 'reconcile error; retrying') },
  );
  // While paused, events go to a stopped queue and are dropped: resume() queues every TaskService, and
  // a reconcile reads the current state, so nothing missed matters.
  let queue = newQueue();
  let paused = false;
  // the informers' list calls; their watches run on without a deadline
  const objects = apiClient(kc, KubernetesObjectApi, opts.apiTimeoutMs);
  const runners: Runner[] = [];

  // Every informer once per watched namespace (namespaced mode), or once for the cluster.
  const scopes: (string | undefined)[] = opts.namespaces ?? [undefined];
  const where = (ns: string | undefined) => (ns ? ` in ${ns}` : '');

  // TaskServices: spec changes (generation), deletion and finalizer changes; status writes are ours.
  const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  const tsInformers = scopes.map((ns) => {
    const count = new FailureCount();
    const inf = makeInformer<KubernetesObject>(kc, collectionPath(API_VERSION, PLURAL, ns), count.list(() => objects.list(API_VERSION, KIND, ns)));
    inf.on('add', (o) => queue.add(keyOf(o)));
    inf.on('update', (o) => queue.add(keyOf(o)));
    inf.on('delete', (o) => queue.add(keyOf(o)));
    return { inf, what: `${KIND}.${GROUP}/${VERSION}${where(ns)}`, count };
  });
  const everyTaskService = () => tsInformers.flatMap(({ inf }) => inf.list());

  // Children: any change (status of a Deployment, a hand edit, a deletion) re-checks the owner.
  const selector = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
  // CloudNativePG's Cluster is watched where its CRD is served at start (its status is the Database condition).
  const cloudNativePG = await objects.list(CNPG_API_VERSION, 'Cluster', scopes[0], undefined, undefined, undefined, undefined, undefined, 1).then(
    () => true,
    () => false,
  );
  const childInformers = childKinds(cronJobApiVersion, cloudNativePG, pdbApiVersion).flatMap((k) => scopes.map((ns) => {
    const count = new FailureCount();
    const inf = makeInformer<KubernetesObject>(
      kc,
      collectionPath(k.apiVersion, plurals[k.kind] as string, ns),
      count.list(() => objects.list(k.apiVersion, k.kind, ns, undefined, undefined, undefined, undefined, selector)),
      selector,
    );
    const owner = (o: KubernetesObject) => {
      const l = o.metadata?.labels ?? {};
      if (l[OWNER_NAME_LABEL] && l[OWNER_NAMESPACE_LABEL]) queue.add(`${l[OWNER_NAMESPACE_LABEL]}/${l[OWNER_NAME_LABEL]}`);
    };
    inf.on('add', owner);
    inf.on('update', owner);
    inf.on('delete', owner);
    return { inf, what: `${k.kind}.${k.apiVersion}${where(ns)}`, count };
  }));

  // A node joining or leaving changes what the firewall must keep open on every other node (cluster
  // mode only: namespaced mode reads nothing outside its namespaces and runs no firewall).
  const nodeInformers = opts.namespaces
    ? []
    : [
        (() => {
          const count = new FailureCount();
          const inf = makeInformer<KubernetesObject>(kc, '/api/v1/nodes', count.list(() => objects.list('v1', 'Node', undefined)));
          const requeueAll = () => {
            for (const o of everyTaskService()) queue.add(keyOf(o));
          };
          inf.on('add', requeueAll);
          inf.on('delete', requeueAll);
          return { inf, what: 'Node.v1', count };
        })(),
      ];

  for (const { inf, what, count } of [...nodeInformers, ...tsInformers, ...childInformers]) {
    runners.push(keepRunning(inf, what, log, count));
    try {
      await inf.start();
    } catch (err) {
      await Promise.all(runners.map((r) => r.stop()));
      await queue.shutdown();
      throw err;
    }
  }
  log.info({ cloudNativePG, namespaces: opts.namespaces ?? 'all' }, 'controller started');

  // Generated Secrets are not watched (that would need list/watch on every Secret in the cluster):
  // one GET per TaskService every keyCheckMs compares them with status.keyChecksums; a mismatch the
  // status does not report yet queues a reconcile, which raises the KeyMaterial condition.
  const secrets = createKubeClient(kc, opts.apiTimeoutMs);
  let checking = false;
  const keyCheck = setInterval(() => {
    if (checking || paused) return;
    checking = true;
    void (async () => {
      for (const o of everyTaskService() as unknown as TaskService[]) {
        const recorded = o.status?.keyChecksums;
        if (!recorded || !Object.keys(recorded).length || o.metadata.deletionTimestamp) continue;
        const secret = await secrets.get({ apiVersion: 'v1', kind: 'Secret', metadata: { name: childName(o, 'generated'), namespace: o.metadata.namespace } });
        const mismatch = checkKeys(Object.keys(recorded), (secret?.data ?? {}) as Record<string, string>, recorded).fingerprint !== '';
        const reported = o.status?.conditions?.find((c) => c.type === 'KeyMaterial')?.status === 'False';
        if (mismatch !== reported) queue.add(`${o.metadata.namespace}/${o.metadata.name}`);
      }
    })()
      .catch((err: unknown) => log.warn({ err: describeError(err) }, 'key check failed'))
      .finally(() => (checking = false));
  }, opts.keyCheckMs ?? 5000);

  // The database can go away without any Kubernetes object changing: every databaseCheckMs each
  // TaskService's gateway is asked, and a changed answer queues a reconcile, which sets Database.
  const answers = new Map<string, string>();
  let asking = false;
  const databaseCheck = opts.gatewayHealth
    ? setInterval(() => {
        if (asking || paused) return;
        asking = true;
        const ask = opts.gatewayHealth!;
        void (async () => {
          for (const o of everyTaskService() as unknown as TaskService[]) {
            if (o.metadata.deletionTimestamp) continue;
            const key = `${o.metadata.namespace}/${o.metadata.name}`;
            const h = await ask(gatewayHealthUrl(o));
            if (!h) continue;
            const answer = 'unavailable' in h ? 'unavailable' : `${h.code} ${h.status ?? ''}`;
            if (answers.has(key) && answers.get(key) !== answer) queue.add(key);
            answers.set(key, answer);
          }
        })()
          .catch((err: unknown) => log.warn({ err: describeError(err) }, 'database check failed'))
          .finally(() => (asking = false));
      }, opts.databaseCheckMs ?? 10_000)
    : undefined;

  return {
    cronJobApiVersion,
    get queue() {
      return queue;
    },
    async pause() {
      if (paused) return;
      paused = true;
      await queue.shutdown();
      log.info('controller paused (informers kept)');
    },
    resume() {
      if (!paused) return;
      paused = false;
      queue = newQueue();
      for (const o of everyTaskService()) queue.add(keyOf(o));
      log.info('controller resumed');
    },
    problem: () => runners.map((r) => r.problem()).find((p) => p !== undefined),
    async stop() {
      clearInterval(keyCheck);
      if (databaseCheck) clearInterval(databaseCheck);
      await Promise.all(runners.map((r) => r.stop()));
      await queue.shutdown();
      log.info('controller stopped');
    },
  };
}
