/**
 * Level-triggered reconcile of one TaskService, keyed `namespace/name`: read the current object,
 * apply every desired child, prune children no longer desired, write status. Idempotent: running it
 * twice in a row changes nothing the second time.
 */
import type { Logger } from 'pino';
import {
  FINALIZER,
  InvalidTaskServiceError,
  OWNER_NAME_LABEL,
  OWNER_NAMESPACE_LABEL,
  desiredChildren,
  needsFinalizer,
  objectKey,
  type CronJobApiVersion,
} from './desired.ts';
import { describeError, type KubeClient } from './kube.ts';
import { computeStatus, statusChanged, transitions, type ObservedDeployment } from './status.ts';
import type { KubeObject, TaskService } from './types.ts';

export interface ReconcilerOptions {
  client: KubeClient;
  log: Logger;
  cronJobApiVersion: CronJobApiVersion;
  /** a timed re-check while not Ready, and a slow resync once Ready */
  notReadyRecheckMs?: number;
  resyncMs?: number;
  now?: () => Date;
}

export type ReconcileResult = { requeueAfterMs: number } | void;

/** Every kind the operator creates, for pruning and for cleanup across namespaces. */
export const childKinds = (cron: CronJobApiVersion): { apiVersion: string; kind: string }[] => [
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: cron, kind: 'CronJob' },
];

const observedDeployment = (o: KubeObject): ObservedDeployment => ({
  name: o.metadata.name,
  generation: o.metadata.generation,
  spec: o.spec as ObservedDeployment['spec'],
  status: o.status as ObservedDeployment['status'],
});

export const splitKey = (key: string): { namespace: string; name: string } => {
  const i = key.indexOf('/');
  return { namespace: key.slice(0, i), name: key.slice(i + 1) };
};

export function createReconciler(opts: ReconcilerOptions): (key: string) => Promise<ReconcileResult> {
  const { client, log, cronJobApiVersion } = opts;
  const now = opts.now ?? (() => new Date());
  const notReadyRecheckMs = opts.notReadyRecheckMs ?? 15_000;
  const resyncMs = opts.resyncMs ?? 300_000;

  const ownedSelector = (ts: TaskService) => `${OWNER_NAME_LABEL}=${ts.metadata.name},${OWNER_NAMESPACE_LABEL}=${ts.metadata.namespace}`;

  async function listOwned(ts: TaskService): Promise<KubeObject[]> {
    const lists = await Promise.all(childKinds(cronJobApiVersion).map((k) => client.list(k.apiVersion, k.kind, ownedSelector(ts))));
    return lists.flat();
  }

  /** Delete owned children not in `keep`; `onlyOtherNamespaces` limits it to what GC cannot reach. */
  async function prune(ts: TaskService, keep: Set<string>, onlyOtherNamespaces: boolean): Promise<number> {
    let removed = 0;
    for (const obj of await listOwned(ts)) {
      if (keep.has(objectKey(obj))) continue;
      if (onlyOtherNamespaces && obj.metadata.namespace === ts.metadata.namespace) continue;
      await client.delete(obj);
      removed++;
      log.info({ key: `${ts.metadata.namespace}/${ts.metadata.name}`, child: objectKey(obj) }, 'deleted child');
    }
    return removed;
  }

  async function finalize(ts: TaskService): Promise<void> {
    if (!ts.metadata.finalizers?.includes(FINALIZER)) return;
    const removed = await prune(ts, new Set(), true);
    await client.setFinalizers(
      ts,
      ts.metadata.finalizers.filter((f) => f !== FINALIZER),
    );
    await client.event(ts, 'Normal', 'CleanedUp', `removed ${removed} children outside namespace ${ts.metadata.namespace}`).catch(() => undefined);
  }

  async function writeStatus(ts: TaskService, deployments: (ObservedDeployment | undefined)[], error?: { reason: string; message: string }) {
    const next = computeStatus({
      generation: ts.metadata.generation ?? 0,
      previous: ts.status,
      deployments,
      error,
      cronJobApiVersion,
      now: now(),
    });
    if (statusChanged(ts.status, next)) await client.patchStatus(ts, next);
    for (const c of transitions(ts.status, next)) {
      const warn = (c.type === 'Degraded' && c.status === 'True') || (c.type === 'Ready' && c.status === 'False' && ts.status !== undefined);
      await client.event(ts, warn ? 'Warning' : 'Normal', c.reason, `${c.type}=${c.status}: ${c.message}`).catch((err: unknown) => {
        log.warn({ err: describeError(err) }, 'could not record event');
      });
    }
    return next;
  }

  return async function reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const ts = await client.getTaskService(namespace, name);
    if (!ts) return; // gone: owner references let the garbage collector remove the children
    if (ts.metadata.deletionTimestamp) {
      await finalize(ts);
      return;
    }

    let desired: KubeObject[];
    try {
      desired = desiredChildren(ts, { cronJobApiVersion });
    } catch (err) {
      if (!(err instanceof InvalidTaskServiceError)) throw err;
      // A spec the builders reject will not fix itself: report it and wait for the next change.
      await writeStatus(ts, [], { reason: 'InvalidSpec', message: err.message });
      return;
    }

    // The finalizer goes on before any child it protects exists, and off once none is left.
    const hasFinalizer = ts.metadata.finalizers?.includes(FINALIZER) ?? false;
    if (needsFinalizer(ts) && !hasFinalizer) {
      await client.setFinalizers(ts, [...(ts.metadata.finalizers ?? []), FINALIZER]);
      return { requeueAfterMs: 0 };
    }

    const live: KubeObject[] = [];
    try {
      for (const obj of desired) live.push(await client.apply(obj));
      await prune(ts, new Set(desired.map(objectKey)), false);
      if (!needsFinalizer(ts) && hasFinalizer) {
        await client.setFinalizers(
          ts,
          (ts.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
        );
      }
    } catch (err) {
      const message = describeError(err);
      log.warn({ key, err: message }, 'reconcile failed');
      await writeStatus(ts, [], { reason: 'ApplyFailed', message }).catch(() => undefined);
      throw err; // the queue retries with backoff
    }

    const status = await writeStatus(ts, live.filter((o) => o.kind === 'Deployment').map(observedDeployment));
    const ready = status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    return { requeueAfterMs: ready ? resyncMs : notReadyRecheckMs };
  };
}
