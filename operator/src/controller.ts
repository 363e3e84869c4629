/**
 * Wiring: informers on TaskServices and on every child kind feed `namespace/name` keys into one
 * deduping work queue; the reconciler handles them. Started only while this replica leads.
 */
import { KubernetesObjectApi, makeInformer, type Informer, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from './crd.ts';
import { MANAGED_BY, OWNER_NAME_LABEL, OWNER_NAMESPACE_LABEL, type CronJobApiVersion } from './desired.ts';
import { createKubeClient, describeError, discoverCronJobApiVersion } from './kube.ts';
import { WorkQueue } from './queue.ts';
import { childKinds, createReconciler } from './reconciler.ts';

export interface ControllerOptions {
  log: Logger;
  workers?: number;
  notReadyRecheckMs?: number;
  resyncMs?: number;
}

export interface RunningController {
  cronJobApiVersion: CronJobApiVersion;
  queue: WorkQueue;
  stop(): Promise<void>;
}

/** The REST collection path of a kind across all namespaces, e.g. /apis/apps/v1/deployments. */
export const collectionPath = (apiVersion: string, plural: string): string =>
  apiVersion.includes('/') ? `/apis/${apiVersion}/${plural}` : `/api/${apiVersion}/${plural}`;

const plurals: Record<string, string> = { ConfigMap: 'configmaps', Service: 'services', Deployment: 'deployments', DaemonSet: 'daemonsets', CronJob: 'cronjobs' };

/** An informer that restarts itself with backoff: client-node's stops on any error but 410. */
function keepRunning(inf: Informer<KubernetesObject>, what: string, log: Logger): { stop(): Promise<void> } {
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  inf.on('connect', () => {
    failures = 0;
  });
  inf.on('error', (err: unknown) => {
    if (stopped) return;
    failures++;
    const delay = Math.min(30_000, 500 * 2 ** Math.min(failures, 6));
    log.warn({ what, err: describeError(err), retryInMs: delay }, 'watch failed; restarting');
    timer = setTimeout(() => {
      if (!stopped) inf.start().catch(() => undefined);
    }, delay);
  });
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inf.stop();
    },
  };
}

export async function startController(kc: KubeConfig, opts: ControllerOptions): Promise<RunningController> {
  const { log } = opts;
  const cronJobApiVersion = await discoverCronJobApiVersion(kc);
  log.info({ cronJobApiVersion }, 'CronJob API discovered');
  const client = createKubeClient(kc);
  const reconcile = createReconciler({
    client,
    log,
    cronJobApiVersion,
    notReadyRecheckMs: opts.notReadyRecheckMs,
    resyncMs: opts.resyncMs,
  });
  const queue = new WorkQueue(
    async (key) => {
      log.debug({ key }, 'reconcile');
      return reconcile(key);
    },
    { workers: opts.workers ?? 2, onError: (key, err, attempt) => log.warn({ key, attempt, err: describeError(err) }, 'reconcile error; retrying') },
  );
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const runners: { stop(): Promise<void> }[] = [];

  // TaskServices: spec changes (generation), deletion and finalizer changes; status writes are ours.
  const tsInformer = makeInformer<KubernetesObject>(kc, collectionPath(API_VERSION, PLURAL), () =>
    objects.list(API_VERSION, KIND, undefined),
  );
  const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  tsInformer.on('add', (o) => queue.add(keyOf(o)));
  tsInformer.on('update', (o) => queue.add(keyOf(o)));
  tsInformer.on('delete', (o) => queue.add(keyOf(o)));

  // Children: any change (status of a Deployment, a hand edit, a deletion) re-checks the owner.
  const selector = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
  const childInformers = childKinds(cronJobApiVersion).map((k) => {
    const inf = makeInformer<KubernetesObject>(
      kc,
      collectionPath(k.apiVersion, plurals[k.kind] as string),
      () => objects.list(k.apiVersion, k.kind, undefined, undefined, undefined, undefined, undefined, selector),
      selector,
    );
    const owner = (o: KubernetesObject) => {
      const l = o.metadata?.labels ?? {};
      if (l[OWNER_NAME_LABEL] && l[OWNER_NAMESPACE_LABEL]) queue.add(`${l[OWNER_NAMESPACE_LABEL]}/${l[OWNER_NAME_LABEL]}`);
    };
    inf.on('add', owner);
    inf.on('update', owner);
    inf.on('delete', owner);
    return { inf, what: `${k.kind}.${k.apiVersion}` };
  });

  for (const { inf, what } of [{ inf: tsInformer, what: `${KIND}.${GROUP}/${VERSION}` }, ...childInformers]) {
    runners.push(keepRunning(inf, what, log));
    await inf.start();
  }
  log.info('controller started');

  return {
    cronJobApiVersion,
    queue,
    async stop() {
      await Promise.all(runners.map((r) => r.stop()));
      await queue.shutdown();
      log.info('controller stopped');
    },
  };
}
