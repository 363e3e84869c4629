/**
 * The operator's only door to the API server: a small interface the reconciler uses, and its
 * implementation over @kubernetes/client-node (server-side apply with one field manager).
 */
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  Observable,
  PolicyV1Api,
  PatchStrategy,
  ServerConfiguration,
  createConfiguration,
  setHeaderOptions,
  type Configuration,
  type ConfigurationOptions,
  type KubeConfig,
  type KubernetesObject,
  type ObservableMiddleware,
} from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from './crd.ts';
import { FIELD_MANAGER, type CronJobApiVersion, type PdbApiVersion } from './desired.ts';
import type { KubeObject, TaskService, TaskServiceStatus } from './types.ts';

export interface ChildRef {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
}

export interface KubeClient {
  getTaskService(namespace: string, name: string): Promise<TaskService | undefined>;
  /** Server-side apply (force, fixed field manager); returns the live object. */
  apply(obj: KubeObject): Promise<KubeObject>;
  get(ref: ChildRef): Promise<KubeObject | undefined>;
  /** Objects of a kind matching a label selector, in one namespace or (none given) in every namespace. */
  list(apiVersion: string, kind: string, labelSelector: string, namespace?: string, fieldSelector?: string): Promise<KubeObject[]>;
  /** Delete (background propagation); a missing object is fine. */
  delete(ref: ChildRef, propagation?: 'Background' | 'Orphan'): Promise<void>;
  patchStatus(ts: TaskService, status: TaskServiceStatus): Promise<void>;
  /** Replace the finalizer list, guarded by resourceVersion (409 on a stale read). */
  setFinalizers(ts: TaskService, finalizers: string[]): Promise<void>;
  /** An Event about the TaskService, or about another object (e.g. a database it left behind). */
  event(about: EventSubject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
  /** Merge-patch labels, annotations or ownerReferences of an object (a list given replaces the old one). */
  patchMetadata(ref: ChildRef, metadata: Record<string, unknown>): Promise<void>;
  /**
   * Create the Secret with `data`, or (exists) merge-patch only these keys in. Create fails with 409
   * if another writer got there first; the queue retries and then only adds what is still missing.
   */
  addSecretData(secret: KubeObject, data: Record<string, string>, exists: boolean): Promise<void>;
}

export interface EventSubject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export const isNotFound = (err: unknown): boolean => err instanceof ApiException && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiException && err.code === 409;

/** Readable one-liner from an ApiException (its body is the API server's Status JSON). */
export function describeError(err: unknown): string {
  if (err instanceof ApiException) {
    try {
      const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
      return `HTTP ${err.code}: ${body?.message ?? String(err.body)}`;
    } catch {
      return `HTTP ${err.code}: ${String(err.body)}`;
    }
  }
  return err instanceof Error ? err.message : String(err);
}

const asJsonMerge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Middleware: the request is aborted if it has not been answered within `ms`. */
const deadline = (ms: number): ObservableMiddleware => ({
  pre: (ctx) => {
    ctx.setSignal(AbortSignal.timeout(Math.max(1, Math.ceil(ms))));
    return new Observable(Promise.resolve(ctx));
  },
  post: (res) => new Observable(Promise.resolve(res)),
});

/** Per-call options: this call gives up after `ms` (overrides the client's own deadline). */
export const withDeadline = (ms: number): ConfigurationOptions => ({ middleware: [deadline(ms)], middlewareMergeStrategy: 'append' });

/**
 * An API client whose every request gives up after `timeoutMs`. Without a deadline a request the API
 * server never answers (a connection a load balancer dropped silently, a stalled etcd) holds its
 * reconcile, and so its key, forever. Watches do not come through here: they are long by design.
 */
export function apiClient<T>(kc: KubeConfig, Api: new (config: Configuration) => T, timeoutMs: number): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  // (KubernetesObjectApi's default namespace stays `default`: every object the operator names carries its own.)
  return new Api(createConfiguration({ baseServer: new ServerConfiguration(cluster.server, {}), authMethods: { default: kc }, middleware: [deadline(timeoutMs)] }));
}

/**
 * Which CronJob API the server serves: batch/v1 from Kubernetes 1.21, batch/v1beta1 before
 * (the project's test server is 1.20.2, which answers 404 for batch/v1 CronJobs).
 */
/** Which PodDisruptionBudget API the server serves: policy/v1 from Kubernetes 1.21, policy/v1beta1 before. */
export async function discoverPdbApiVersion(kc: KubeConfig, timeoutMs: number): Promise<PdbApiVersion> {
  try {
    const resources = await apiClient(kc, PolicyV1Api, timeoutMs).getAPIResources();
    return resources.resources.some((r) => r.name === 'poddisruptionbudgets') ? 'policy/v1' : 'policy/v1beta1';
  } catch (err) {
    if (isNotFound(err)) return 'policy/v1beta1';
    throw err;
  }
}

export async function discoverCronJobApiVersion(kc: KubeConfig, timeoutMs: number): Promise<CronJobApiVersion> {
  const resources = await apiClient(kc, BatchV1Api, timeoutMs).getAPIResources();
  return resources.resources.some((r) => r.name === 'cronjobs') ? 'batch/v1' : 'batch/v1beta1';
}

export function createKubeClient(kc: KubeConfig, timeoutMs: number, component = FIELD_MANAGER): KubeClient {
  const objects = apiClient(kc, KubernetesObjectApi, timeoutMs);
  const custom = apiClient(kc, CustomObjectsApi, timeoutMs);
  const core = apiClient(kc, CoreV1Api, timeoutMs);
  const tsParams = (ts: { metadata: { namespace: string; name: string } }) => ({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    namespace: ts.metadata.namespace,
    name: ts.metadata.name,
  });

  return {
    async getTaskService(namespace, name) {
      try {
        return (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name })) as TaskService;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async apply(obj) {
      // The full object every time: a field left out of an apply gives up our ownership of it.
      const body = { ...obj, metadata: { ...obj.metadata } } as KubernetesObject;
      return (await objects.patch(body, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply)) as KubeObject;
    },
    async get(ref) {
      try {
        return (await objects.read(ref)) as KubeObject;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async list(apiVersion, kind, labelSelector, namespace, fieldSelector) {
      const res = await objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, fieldSelector, labelSelector);
      // List items carry no apiVersion/kind; callers compare and delete them by those.
      return res.items.map((i) => ({ ...i, apiVersion, kind }) as KubeObject);
    },
    async delete(ref, propagation = 'Background') {
      try {
        await objects.delete(ref, undefined, undefined, undefined, undefined, propagation);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
    async patchStatus(ts, status) {
      await custom.patchNamespacedCustomObjectStatus({ ...tsParams(ts), body: { status } }, asJsonMerge);
    },
    async setFinalizers(ts, finalizers) {
      await custom.patchNamespacedCustomObject(
        { ...tsParams(ts), body: { metadata: { finalizers, resourceVersion: ts.metadata.resourceVersion } } },
        asJsonMerge,
      );
    },
    async addSecretData(secret, data, exists) {
      const ref = { name: secret.metadata.name, namespace: secret.metadata.namespace as string };
      if (exists) await core.patchNamespacedSecret({ ...ref, body: { data } }, asJsonMerge);
      else await core.createNamespacedSecret({ namespace: ref.namespace, body: { ...secret, data } as never });
    },
    async patchMetadata(ref, metadata) {
      await objects.patch(
        { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.metadata.name, namespace: ref.metadata.namespace, ...metadata } },
        undefined,
        undefined,
        FIELD_MANAGER,
        undefined,
        PatchStrategy.MergePatch,
      );
    },
    async event(about, type, reason, message) {
      const now = new Date();
      const namespace = about.metadata.namespace as string;
      await core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${about.metadata.name}.`, namespace },
          involvedObject: {
            apiVersion: about.apiVersion,
            kind: about.kind,
            name: about.metadata.name,
            namespace,
            uid: about.metadata.uid,
            resourceVersion: about.metadata.resourceVersion,
          },
          type,
          reason,
          message: message.slice(0, 1024),
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          source: { component },
        },
      });
    },
  };
}
