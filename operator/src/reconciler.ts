/**
 * Level-triggered reconcile of one TaskService, keyed `namespace/name`: read the current object,
 * apply every desired child that moved since this replica last applied it, prune children no longer
 * desired, write status. Idempotent: running it twice in a row changes nothing the second time.
 */
import type { Logger } from 'pino';
import {
  FINALIZER,
  InvalidTaskServiceError,
  OWNER_NAME_LABEL,
  OWNER_NAMESPACE_LABEL,
  CNPG_API_VERSION,
  GENERATED,
  childName,
  firewallNamespace,
  ownerReference,
  wiring,
  needsFinalizer,
  objectKey,
  plan,
  type CronJobApiVersion,
  type FirewallFacts,
  type PlanCondition,
} from './desired.ts';
import { API_VERSION, KIND } from './crd.ts';
import { CONTROL_PLANE_LABELS, firewallWinner, type ClusterFacts } from './firewall.ts';
import { parse as parseYaml } from 'yaml';
import { randomBytes } from 'node:crypto';
import { describeError, type KubeClient } from './kube.ts';
import { computeStatus, statusChanged, transitions, type ObservedDeployment } from './status.ts';
import { normalizeSpec, type KubeObject, type TaskService } from './types.ts';

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

/** A child as this replica last applied it: the manifest sent and the resourceVersion answered. */
interface AppliedChild {
  manifest: string;
  resourceVersion: string | undefined;
}

/** Every kind the operator creates, for pruning and for cleanup across namespaces. */
export const childKinds = (cron: CronJobApiVersion): { apiVersion: string; kind: string }[] => [
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' },
  { apiVersion: cron, kind: 'CronJob' },
];

/** Random values for generated keys, in the shapes the runtime validates (config.ts). */
export function generateValue(key: string): string {
  if (key === GENERATED.TOTP_ENCRYPTION_KEY) return randomBytes(32).toString('hex');
  if (key === GENERATED.SECRETS_KEYRING) return `generated:${randomBytes(32).toString('hex')}`;
  if (key === GENERATED.NATS_USER) return 'tasksvc';
  return randomBytes(32).toString('base64url');
}

const observedDeployment = (o: KubeObject): ObservedDeployment => ({
  name: o.metadata.name,
  generation: o.metadata.generation,
  spec: o.spec as ObservedDeployment['spec'],
  status: o.status as ObservedDeployment['status'],
});

/**
 * Where the API server listens: the `kubernetes` Endpoints, else (an API server on loopback publishes
 * none) the `kubernetes` Service's cluster IP, which kube-proxy forwards from every node.
 */
export function apiServerEndpoints(endpoints: KubeObject | undefined, service: KubeObject | undefined): ClusterFacts['apiServer'] {
  const subsets = (endpoints?.subsets ?? []) as { addresses?: { ip: string }[]; ports?: { port: number; name?: string }[] }[];
  const fromEndpoints = subsets.flatMap((s) => {
    const port = s.ports?.find((p) => p.name === 'https')?.port ?? s.ports?.[0]?.port ?? 443;
    return (s.addresses ?? []).map((a) => ({ ip: a.ip, port }));
  });
  if (fromEndpoints.length) return fromEndpoints;
  const spec = (service?.spec ?? {}) as { clusterIP?: string; ports?: { port: number }[] };
  return spec.clusterIP && spec.clusterIP !== 'None' ? [{ ip: spec.clusterIP, port: spec.ports?.[0]?.port ?? 443 }] : [];
}

/** networking.podSubnet/serviceSubnet of kubeadm's ClusterConfiguration (YAML inside the ConfigMap). */
export function kubeadmNetworking(cm: KubeObject | undefined): ClusterFacts['kubeadm'] {
  const text = (cm?.data as Record<string, string> | undefined)?.ClusterConfiguration;
  if (!text) return undefined;
  try {
    const net = (parseYaml(text) as { networking?: { podSubnet?: string; serviceSubnet?: string } } | null)?.networking ?? {};
    return { podSubnet: net.podSubnet, serviceSubnet: net.serviceSubnet };
  } catch {
    return undefined;
  }
}

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
  async function prune(ts: TaskService, keep: Set<string>, onlyOtherNamespaces: boolean, owned?: KubeObject[]): Promise<number> {
    let removed = 0;
    for (const obj of owned ?? (await listOwned(ts))) {
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

  /** What the firewall needs to know about the cluster (nodes, API server, kubeadm networking, other firewalls). */
  async function firewallFacts(ts: TaskService): Promise<FirewallFacts> {
    const spec = normalizeSpec(ts.spec);
    const [nodes, endpoints, apiService, kubeadm, all] = await Promise.all([
      client.list('v1', 'Node', ''),
      client.get({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'kubernetes', namespace: 'default' } }),
      client.get({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'kubernetes', namespace: 'default' } }),
      client.get({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' } }),
      client.list(API_VERSION, KIND, ''),
    ]);
    const cluster: ClusterFacts = {
      nodes: nodes.map((n) => {
        const spec = (n.spec ?? {}) as { podCIDRs?: string[]; podCIDR?: string };
        const status = (n.status ?? {}) as { addresses?: { type: string; address: string }[] };
        return {
          name: n.metadata.name,
          addresses: (status.addresses ?? []).filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP').map((a) => a.address),
          podCIDRs: spec.podCIDRs ?? (spec.podCIDR ? [spec.podCIDR] : []),
          controlPlane: CONTROL_PLANE_LABELS.some((l) => n.metadata.labels?.[l] !== undefined),
        };
      }),
      apiServer: apiServerEndpoints(endpoints, apiService),
      kubeadm: kubeadmNetworking(kubeadm),
    };
    const candidates = (all as unknown as TaskService[])
      .filter((t) => !t.metadata.deletionTimestamp && normalizeSpec(t.spec).firewall.enabled)
      .map((t) => ({ namespace: t.metadata.namespace, name: t.metadata.name, creationTimestamp: t.metadata.creationTimestamp }));
    const winner = firewallWinner(candidates);
    const self = winner && winner.namespace === ts.metadata.namespace && winner.name === ts.metadata.name;
    let webPassword = false;
    const ref = spec.firewall.webPasswordSecret;
    if (ref) {
      const secret = await client.get({ apiVersion: 'v1', kind: 'Secret', metadata: { name: ref.name, namespace: firewallNamespace(ts, spec) } });
      webPassword = Boolean((secret?.data as Record<string, string> | undefined)?.[ref.key]);
    }
    return { cluster, webPassword, ...(winner && !self ? { ownedBy: `${winner.namespace}/${winner.name}` } : {}) };
  }

  /** Whether the API server serves a kind (e.g. CloudNativePG's Cluster once its CRD is installed). */
  async function served(apiVersion: string, kind: string): Promise<boolean> {
    try {
      await client.list(apiVersion, kind, 'app.kubernetes.io/managed-by=nobody');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The generated Secret: created with every key the wiring needs; later only missing keys are added.
   * A value already there is never replaced (sessions, TOTP secrets and NATS auth depend on it).
   */
  async function ensureGenerated(ts: TaskService, keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    const ref = { apiVersion: 'v1', kind: 'Secret', metadata: { name: childName(ts, 'generated'), namespace: ts.metadata.namespace } };
    const existing = await client.get(ref);
    const have = (existing?.data ?? {}) as Record<string, string>;
    const missing = keys.filter((k) => !have[k]);
    if (missing.length === 0) return;
    const data = Object.fromEntries(missing.map((k) => [k, Buffer.from(generateValue(k)).toString('base64')]));
    await client.addSecretData(
      {
        ...ref,
        metadata: {
          ...ref.metadata,
          labels: { 'app.kubernetes.io/managed-by': 'taskservice-operator', 'app.kubernetes.io/part-of': 'task-service' },
          ownerReferences: [ownerReference(ts)],
        },
        type: 'Opaque',
      },
      data,
      existing !== undefined,
    );
    log.info({ key: `${ts.metadata.namespace}/${ts.metadata.name}`, generated: missing }, 'generated secret values');
  }

  async function writeStatus(
    ts: TaskService,
    deployments: (ObservedDeployment | undefined)[],
    error?: { reason: string; message: string },
    extra: PlanCondition[] = [],
  ) {
    const next = computeStatus({
      generation: ts.metadata.generation ?? 0,
      previous: ts.status,
      deployments,
      error,
      extra,
      cronJobApiVersion,
      now: now(),
    });
    if (statusChanged(ts.status, next)) await client.patchStatus(ts, next);
    for (const c of transitions(ts.status, next)) {
      const warn =
        (c.type === 'Degraded' && c.status === 'True') ||
        (c.type === 'Ready' && c.status === 'False' && ts.status !== undefined) ||
        (extra.some((x) => x.type === c.type) && c.status === 'False');
      await client.event(ts, warn ? 'Warning' : 'Normal', c.reason, `${c.type}=${c.status}: ${c.message}`).catch((err: unknown) => {
        log.warn({ err: describeError(err) }, 'could not record event');
      });
    }
    return next;
  }

  /**
   * Per TaskService, what this replica last applied to each child and the resourceVersion the API
   * server answered. A child still at that version, with the same manifest desired, is skipped: a
   * no-op apply is still a full PATCH for the API server, one per child on every resync and every
   * child event. Any write to the child by anyone (an edit, a controller's status) moves its version
   * and the next reconcile applies it again; a new leader starts empty and applies everything.
   */
  const appliedBy = new Map<string, Map<string, AppliedChild>>();

  return async function reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const ts = await client.getTaskService(namespace, name);
    if (!ts) {
      appliedBy.delete(key);
      return; // gone: owner references let the garbage collector remove the children
    }
    if (ts.metadata.deletionTimestamp) {
      await finalize(ts);
      return;
    }

    let desired: KubeObject[];
    let extra: PlanCondition[];
    try {
      const spec = normalizeSpec(ts.spec);
      const facts = spec.firewall.enabled ? await firewallFacts(ts) : undefined;
      const cloudNativePG = spec.database?.managed ? await served(CNPG_API_VERSION, 'Cluster') : undefined;
      ({ objects: desired, conditions: extra } = plan(ts, { cronJobApiVersion, firewall: facts, cloudNativePG }));
      await ensureGenerated(ts, wiring(ts, spec).generatedKeys);
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
    const foreign: string[] = [];
    try {
      const ownedList = await listOwned(ts);
      const owned = new Map(ownedList.map((o) => [objectKey(o), o]));
      const applied = appliedBy.get(key) ?? new Map<string, AppliedChild>();
      appliedBy.set(key, applied);
      for (const obj of desired) {
        const childKey = objectKey(obj);
        const current = owned.get(childKey);
        // Never adopt what the operator did not create: applying would take it over, pruning would delete it.
        if (!current && (await client.get(obj))) {
          foreign.push(`${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}`);
          continue;
        }
        const manifest = JSON.stringify(obj);
        const last = applied.get(childKey);
        if (current && last?.manifest === manifest && last.resourceVersion === current.metadata.resourceVersion) {
          live.push(current);
          continue;
        }
        const result = await client.apply(obj);
        applied.set(childKey, { manifest, resourceVersion: result.metadata.resourceVersion });
        live.push(result);
      }
      await prune(ts, new Set(desired.map(objectKey)), false, ownedList);
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

    extra.push(
      foreign.length
        ? { type: 'Owned', status: 'False', reason: 'ForeignObject', message: `refusing to adopt objects the operator did not create (delete or rename them): ${foreign.join(', ')}` }
        : { type: 'Owned', status: 'True', reason: 'AllChildrenOwned', message: 'every child was created by the operator' },
    );
    const deployments = desired.filter((o) => o.kind === 'Deployment').map((d) => live.find((o) => objectKey(o) === objectKey(d)));
    const status = await writeStatus(ts, deployments.map((d) => (d ? observedDeployment(d) : undefined)), undefined, extra);
    const ready = status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    return { requeueAfterMs: ready ? resyncMs : notReadyRecheckMs };
  };
}
