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
  RETAINED_ANNOTATION,
  childName,
  GATEWAY_PORT,
  retainsData,
  selectorLabels,
  firewallNamespace,
  ownerReference,
  wiring,
  subkeySecrets,
  subkeysChecksum,
  MANAGED_BY,
  needsFinalizer,
  objectKey,
  plan,
  type CronJobApiVersion,
  type PdbApiVersion,
  type FirewallFacts,
  type PlanCondition,
  type Wiring,
} from './desired.ts';
import { API_VERSION, KIND } from './crd.ts';
import { CONTROL_PLANE_LABELS, firewallWinner, type ClusterFacts } from './firewall.ts';
import { parse as parseYaml } from 'yaml';
import { randomBytes } from 'node:crypto';
import { describeError, type KubeClient } from './kube.ts';
import { checkKeys, checksum, decideKeys, ACCEPT_KEYS_ANNOTATION } from './keys.ts';
import { computeStatus, databaseCondition, databaseReachability, firewallCondition, statusChanged, transitions, type FirewallPodReport, type GatewayHealth, type ObservedDeployment } from './status.ts';
import { normalizeSpec, type KubeObject, type TaskService } from './types.ts';

export interface ReconcilerOptions {
  client: KubeClient;
  log: Logger;
  cronJobApiVersion: CronJobApiVersion;
  pdbApiVersion?: PdbApiVersion;
  /** a timed re-check while not Ready, and a slow resync once Ready */
  notReadyRecheckMs?: number;
  resyncMs?: number;
  now?: () => Date;
  /** namespaced mode (WATCH_NAMESPACES): lists stay in the TaskService's namespace; no cluster-wide reads, so no firewall */
  namespaced?: boolean;
  /**
   * Asks the gateway's GET /api/health (its Service URL) whether the services reach the database, for
   * the Database condition. Unset (an operator outside the cluster, where Service names do not resolve):
   * not asked, and an external database gets no Database condition (nor when it answers undefined).
   */
  gatewayHealth?: (url: string) => Promise<GatewayHealth | undefined>;
}

/** The gateway's health endpoint through its Service, as the CronJob reaches /api/cron. */
export const gatewayHealthUrl = (ts: { metadata: { name: string; namespace: string } }): string =>
  `http://${childName(ts as TaskService, 'gateway')}.${ts.metadata.namespace}.svc:${GATEWAY_PORT}/api/health`;

/** GET /api/health within 3 s: its code and `status`, or why it could not be asked. */
export async function fetchGatewayHealth(url: string): Promise<GatewayHealth> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(3000) });
    const body = (await r.json().catch(() => undefined)) as { status?: unknown } | undefined;
    return { code: r.status, ...(typeof body?.status === 'string' ? { status: body.status } : {}) };
  } catch (err) {
    return { unavailable: `cannot ask ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}` };
  }
}

export type ReconcileResult = { requeueAfterMs: number } | void;

/** A child as this replica last applied it: the manifest sent and the resourceVersion answered. */
interface AppliedChild {
  manifest: string;
  resourceVersion: string | undefined;
}

/** Every kind the operator creates, for pruning and for cleanup across namespaces (CloudNativePG's Cluster where served). */
export const childKinds = (cron: CronJobApiVersion, cloudNativePG = false, pdb: PdbApiVersion = 'policy/v1'): { apiVersion: string; kind: string }[] => [
  { apiVersion: 'v1', kind: 'ConfigMap' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' },
  { apiVersion: cron, kind: 'CronJob' },
  { apiVersion: pdb, kind: 'PodDisruptionBudget' },
  ...(cloudNativePG ? [{ apiVersion: CNPG_API_VERSION, kind: 'Cluster' }] : []),
];

/** A child pruning must never delete: a database kept by deletionPolicy Retain (no owner reference to the TaskService). */
const retained = (obj: KubeObject, ts: TaskService): boolean =>
  obj.kind === 'Cluster' && !(obj.metadata.ownerReferences ?? []).some((o) => o.uid === ts.metadata.uid);

/**
 * What a StatefulSet cannot change in place (the API server refuses it): the governing Service, the
 * selector, the volume claim templates. A change of one (spec.nats.replicas 1 → 3 moves serviceName
 * to the routes Service) needs the StatefulSet deleted with its pods orphaned and created again: the
 * new one adopts the running pods and rolls them, and their PVCs (never deleted by a StatefulSet) are
 * claimed again by name.
 */
/** JSON with every object's keys sorted: equal for equal values whatever order their keys came in. */
const canonicalJson = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));

export function statefulSetImmutableChange(current: KubeObject, desired: KubeObject): string | undefined {
  const c = (current.spec ?? {}) as { serviceName?: string; selector?: unknown; volumeClaimTemplates?: { metadata?: { name?: string } }[] };
  const d = (desired.spec ?? {}) as typeof c;
  if ((c.serviceName ?? '') !== (d.serviceName ?? '')) return `serviceName ${c.serviceName} → ${d.serviceName}`;
  // by value: the API server returns map keys sorted (Go's encoding/json), our object has them in our order;
  // comparing the JSON text flagged every live StatefulSet, recreating NATS's at each reconcile after a status change
  if (canonicalJson(c.selector) !== canonicalJson(d.selector)) return 'selector';
  const claims = (x: typeof c) => (x.volumeClaimTemplates ?? []).map((v) => v.metadata?.name).join(',');
  if (claims(c) !== claims(d)) return `volumeClaimTemplates ${claims(c)} → ${claims(d)}`;
  return undefined;
}

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

  const ownedSelector = (ts: { metadata: { name: string; namespace: string } }) => `${OWNER_NAME_LABEL}=${ts.metadata.name},${OWNER_NAMESPACE_LABEL}=${ts.metadata.namespace}`;

  async function listOwned(ts: { metadata: { name: string; namespace: string } }, cloudNativePG: boolean): Promise<KubeObject[]> {
    const ns = opts.namespaced ? ts.metadata.namespace : undefined;
    const lists = await Promise.all(childKinds(cronJobApiVersion, cloudNativePG, opts.pdbApiVersion).map((k) => client.list(k.apiVersion, k.kind, ownedSelector(ts), ns)));
    return lists.flat();
  }

  /** Delete owned children not in `keep`; `onlyOtherNamespaces` limits it to what GC cannot reach. */
  async function prune(ts: TaskService, keep: Set<string>, onlyOtherNamespaces: boolean, owned?: KubeObject[]): Promise<number> {
    let removed = 0;
    for (const obj of owned ?? (await listOwned(ts, false))) {
      if (keep.has(objectKey(obj)) || retained(obj, ts)) continue;
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
  async function served(apiVersion: string, kind: string, namespace: string): Promise<boolean> {
    try {
      await client.list(apiVersion, kind, 'app.kubernetes.io/managed-by=nobody', opts.namespaced ? namespace : undefined);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The generated Secret: keys never recorded in status are generated; a recorded key that went
   * missing or changed is never silently replaced (keys.ts): a KeyMaterial condition says so until the
   * admin restores the Secret or accepts new values. The Secret is owned by the TaskService (so it is
   * garbage-collected with it) only when the database goes too (retainsData).
   */
  async function ensureGenerated(ts: TaskService, keys: string[]): Promise<{ condition?: PlanCondition; keyChecksums?: Record<string, string> }> {
    if (keys.length === 0) return {};
    const spec = normalizeSpec(ts.spec);
    const name = childName(ts, 'generated');
    const ref = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: ts.metadata.namespace } };
    const existing = await client.get(ref);
    const recorded = ts.status?.keyChecksums ?? {};
    const check = checkKeys(keys, (existing?.data ?? {}) as Record<string, string>, recorded);
    const decision = decideKeys(name, check, recorded, ts.metadata.annotations?.[ACCEPT_KEYS_ANNOTATION], ts.metadata.name);
    const owned = !retainsData(spec);
    const ownerReferences = owned ? [ownerReference(ts)] : [];
    const record = { ...decision.record };
    if (decision.generate.length) {
      const data = Object.fromEntries(decision.generate.map((k) => [k, Buffer.from(generateValue(k)).toString('base64')]));
      await client.addSecretData(
        {
          ...ref,
          metadata: {
            ...ref.metadata,
            labels: { 'app.kubernetes.io/managed-by': 'taskservice-operator', 'app.kubernetes.io/part-of': 'task-service', [OWNER_NAME_LABEL]: ts.metadata.name, [OWNER_NAMESPACE_LABEL]: ts.metadata.namespace },
            ownerReferences,
          },
          type: 'Opaque',
        },
        data,
        existing !== undefined,
      );
      for (const [k, v] of Object.entries(data)) record[k] = checksum(v);
      log.info({ key: `${ts.metadata.namespace}/${ts.metadata.name}`, generated: decision.generate }, 'generated secret values');
    }
    // An owner reference from an earlier operator (or a deletionPolicy change) follows the policy now.
    // A note that a deleted TaskService left it behind no longer holds once one uses it again.
    if (existing) {
      const mine = (existing.metadata.ownerReferences ?? []).some((o) => o.uid === ts.metadata.uid);
      const patch: Record<string, unknown> = {};
      if (mine !== owned) patch.ownerReferences = [...(existing.metadata.ownerReferences ?? []).filter((o) => o.uid !== ts.metadata.uid), ...ownerReferences];
      if (existing.metadata.annotations?.[RETAINED_ANNOTATION]) patch.annotations = { [RETAINED_ANNOTATION]: null };
      if (Object.keys(patch).length) await client.patchMetadata(ref, patch);
    }
    return { condition: decision.condition, keyChecksums: record };
  }

  /**
   * Each ring service's derived ring (docs/upgrading.md#derived-rings-secrets_subkeys): read the master
   * SECRETS_KEYRING from its Secret (the generated one or the admin's), write `<name>-<service>-keys`
   * with only that service's subkeys, and return their checksums for the pod templates, so a change of
   * the master (a rotation) reaches the Secrets and rolls the two Deployments. A master that is missing
   * or that the services would refuse leaves the derived Secrets as they are and says so.
   */
  async function ensureSubkeys(ts: TaskService, w: Wiring): Promise<{ condition: PlanCondition; checksums?: Record<string, string> }> {
    const ref = w.secretsKeyring;
    const source = await client.get({ apiVersion: 'v1', kind: 'Secret', metadata: { name: ref.name, namespace: ts.metadata.namespace } });
    const b64 = (source?.data as Record<string, string> | undefined)?.[ref.key];
    const waiting = 'the webhook and notifier Deployments keep their derived rings as they are (new pods wait for them)';
    if (!b64) return { checksums: await currentSubkeyChecksums(ts, w), condition: { type: 'KeyRing', status: 'False', reason: 'KeyRingMissing', message: `Secret ${ref.name} holds no key ${ref.key} (SECRETS_KEYRING): ${waiting}` } };
    const derived = subkeySecrets(ts, Buffer.from(b64, 'base64').toString('utf8').trim());
    if (typeof derived === 'string') return { checksums: await currentSubkeyChecksums(ts, w), condition: { type: 'KeyRing', status: 'False', reason: 'KeyRingInvalid', message: `Secret ${ref.name} key ${ref.key} (SECRETS_KEYRING): ${derived}; ${waiting}` } };
    const foreign: string[] = [];
    for (const obj of derived.objects) {
      const existing = await client.get(obj);
      if (existing && existing.metadata.labels?.['app.kubernetes.io/managed-by'] !== MANAGED_BY) {
        foreign.push(obj.metadata.name);
        continue;
      }
      const data = (existing?.data ?? {}) as Record<string, string>;
      if (existing && data.SECRETS_SUBKEYS === (obj.data as Record<string, string>).SECRETS_SUBKEYS) continue;
      await client.apply(obj);
      log.info({ key: `${ts.metadata.namespace}/${ts.metadata.name}`, secret: obj.metadata.name, keyIds: derived.keyIds }, 'wrote a derived key ring');
    }
    if (foreign.length) return { checksums: await currentSubkeyChecksums(ts, w), condition: { type: 'KeyRing', status: 'False', reason: 'ForeignObject', message: `refusing to overwrite Secrets the operator did not create (delete or rename them): ${foreign.join(', ')}` } };
    return {
      checksums: derived.checksums,
      condition: { type: 'KeyRing', status: 'True', reason: 'Derived', message: `webhook and notifier each hold only their own ring derived from Secret ${ref.name} (key ids ${derived.keyIds.join(', ')})` },
    };
  }

  /**
   * The checksums of the derived rings the pods read now. Where the master is missing or refused the
   * derived Secrets stay as they are, so the pod templates must keep these too: without them the
   * webhook and notifier Deployments lost their checksum annotation and rolled (twice: once more when
   * the master came back) while nothing they use had changed.
   */
  async function currentSubkeyChecksums(ts: TaskService, w: Wiring): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [svc, ref] of Object.entries(w.subkeys)) {
      const secret = await client.get({ apiVersion: 'v1', kind: 'Secret', metadata: { name: ref.name, namespace: ts.metadata.namespace } });
      const b64 = (secret?.data as Record<string, string> | undefined)?.[ref.key];
      if (b64) out[svc] = subkeysChecksum(Buffer.from(b64, 'base64').toString('utf8'));
    }
    return out;
  }

  /**
   * A TaskService is gone: what it left on purpose (deletionPolicy Retain) gets an Event saying so and
   * an annotation (so the Event is said once). A TaskService of the same name created later takes it back.
   */
  async function noteRetained(namespace: string, name: string): Promise<void> {
    const ts = { metadata: { name, namespace } };
    const clusters = (await served(CNPG_API_VERSION, 'Cluster', namespace)) ? await client.list(CNPG_API_VERSION, 'Cluster', ownedSelector(ts), namespace) : [];
    const secret = await client.get({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-generated`, namespace } });
    const left = [...clusters.filter((c) => c.metadata.namespace === namespace), ...(secret ? [secret] : [])];
    for (const obj of left) {
      if (obj.metadata.annotations?.[RETAINED_ANNOTATION] || obj.metadata.ownerReferences?.length) continue;
      const message =
        obj.kind === 'Cluster'
          ? `TaskService ${namespace}/${name} was deleted; its database Cluster ${obj.metadata.name} and its volumes are kept (deletionPolicy Retain). Delete it yourself once the data is no longer needed.`
          : `TaskService ${namespace}/${name} was deleted; Secret ${obj.metadata.name} is kept with the keys that encrypt the retained data.`;
      await client.patchMetadata(obj, { annotations: { [RETAINED_ANNOTATION]: `TaskService ${name} deleted; kept by deletionPolicy Retain` } });
      await client.event(obj, 'Normal', 'Retained', message).catch((err: unknown) => log.warn({ err: describeError(err) }, 'could not record event'));
      log.info({ key: `${namespace}/${name}`, kept: objectKey(obj) }, 'kept after deletion');
    }
  }

  /**
   * The Firewall condition from what the daemons report: the DaemonSet's ready count (each core
   * container's readiness probe asks its daemon, services/firewall/src/ready.ts) and, for the pods
   * that are not ready, the probe's last line the kubelet recorded in an `Unhealthy` Event.
   */
  async function observedFirewall(ts: TaskService, desired: KubeObject[], live: KubeObject[], deployed: string): Promise<PlanCondition> {
    const want = desired.find((o) => o.kind === 'DaemonSet');
    const ds = want && live.find((o) => objectKey(o) === objectKey(want));
    if (!want || !ds) return firewallCondition(undefined, [], deployed);
    const ns = want.metadata.namespace;
    const selector = Object.entries(selectorLabels(ts, 'firewall'))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const pods = await client.list('v1', 'Pod', selector, ns);
    const ready = (p: KubeObject) => ((p.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    const events = pods.some((p) => !ready(p)) ? await client.list('v1', 'Event', '', ns, 'involvedObject.kind=Pod,reason=Unhealthy') : [];
    const when = (e: KubeObject) => String((e as { lastTimestamp?: string }).lastTimestamp ?? (e as { eventTime?: string }).eventTime ?? e.metadata.creationTimestamp ?? '');
    const reports: FirewallPodReport[] = pods.map((p) => {
      const probe = events
        .filter((e) => (e as { involvedObject?: { uid?: string } }).involvedObject?.uid === p.metadata.uid)
        .map((e) => ({ at: when(e), text: String((e as { message?: string }).message ?? '') }))
        .filter((e) => e.text.startsWith('Readiness probe failed: '))
        .sort((a, b) => a.at.localeCompare(b.at))
        .at(-1)
        ?.text.slice('Readiness probe failed: '.length)
        .trim();
      return { node: (p.spec as { nodeName?: string } | undefined)?.nodeName, ready: ready(p), ...(probe ? { probe } : {}) };
    });
    return firewallCondition(ds, reports, deployed);
  }

  async function writeStatus(
    ts: TaskService,
    deployments: (ObservedDeployment | undefined)[],
    error?: { reason: string; message: string },
    extra: PlanCondition[] = [],
    keyChecksums = ts.status?.keyChecksums,
    gateway?: { replicas: number; selector: string },
  ) {
    const next = computeStatus({
      generation: ts.metadata.generation ?? 0,
      previous: ts.status,
      deployments,
      error,
      extra,
      keyChecksums,
      gateway,
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
      // gone: owner references let the garbage collector remove the children; say what is kept
      await noteRetained(namespace, name);
      return;
    }
    if (ts.metadata.deletionTimestamp) {
      await finalize(ts);
      return;
    }

    let desired: KubeObject[];
    let extra: PlanCondition[];
    let keys: Awaited<ReturnType<typeof ensureGenerated>>;
    let subkeys: Awaited<ReturnType<typeof ensureSubkeys>>;
    let cloudNativePG: boolean;
    try {
      const spec = normalizeSpec(ts.spec);
      // The firewall needs cluster-wide facts (nodes, other TaskServices): not in namespaced mode.
      const facts = spec.firewall.enabled && !opts.namespaced ? await firewallFacts(ts) : undefined;
      cloudNativePG = spec.database?.managed ? await served(CNPG_API_VERSION, 'Cluster', ts.metadata.namespace) : false;
      const buildOptions = { cronJobApiVersion, pdbApiVersion: opts.pdbApiVersion, firewall: facts, cloudNativePG };
      // planned once before any Secret is written: a spec the builders refuse generates nothing
      plan(ts, buildOptions);
      const w = wiring(ts, spec);
      keys = await ensureGenerated(ts, w.generatedKeys);
      subkeys = await ensureSubkeys(ts, w);
      ({ objects: desired, conditions: extra } = plan(ts, { ...buildOptions, subkeyChecksums: subkeys.checksums }));
      if (spec.firewall.enabled && opts.namespaced) {
        extra = extra.filter((c) => c.type !== 'Firewall');
        extra.push({ type: 'Firewall', status: 'False', reason: 'NamespacedMode', message: 'the firewall needs the cluster-wide operator (WATCH_NAMESPACES unset): it reads every node' });
      }
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
      const ownedList = await listOwned(ts, cloudNativePG);
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
        // Taken back after a deletion that kept it: the note of that deletion no longer holds.
        if (current?.metadata.annotations?.[RETAINED_ANNOTATION]) await client.patchMetadata(current, { annotations: { [RETAINED_ANNOTATION]: null } });
        if (current?.metadata.deletionTimestamp && obj.kind === 'StatefulSet') {
          // Deleted to be recreated, and still going (its pods are being orphaned): deleting it again
          // would only recreate it again later; create it anew once it is gone.
          log.info({ key, child: childKey }, 'StatefulSet still being deleted; it is created anew once it is gone');
          return { requeueAfterMs: 1000 };
        }
        const immutable = current && obj.kind === 'StatefulSet' ? statefulSetImmutableChange(current, obj) : undefined;
        if (immutable) {
          // Orphan: the pods keep running (and serving) until the new StatefulSet adopts and rolls them.
          await client.delete(current!, 'Orphan');
          log.info({ key, child: childKey, change: immutable }, 'StatefulSet deleted (pods and volumes kept) to change what it cannot change in place');
          await client.event(ts, 'Normal', 'StatefulSetRecreated', `${obj.metadata.name}: ${immutable} cannot change in place; recreated, its pods and volumes kept`).catch(() => undefined);
          // The garbage collector removes it once the pods are released; the next reconcile creates it.
          return { requeueAfterMs: 1000 };
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
    if (keys.condition) extra.push(keys.condition);
    extra.push(subkeys.condition);
    const fw = extra.findIndex((c) => c.type === 'Firewall' && c.status === 'True');
    if (fw >= 0) extra[fw] = await observedFirewall(ts, desired, live, extra[fw]!.message);
    const db = desired.find((o) => o.kind === 'Cluster' && o.apiVersion === CNPG_API_VERSION);
    const cluster = db ? databaseCondition(live.find((o) => objectKey(o) === objectKey(db)), retainsData(normalizeSpec(ts.spec))) : undefined;
    const url = gatewayHealthUrl(ts);
    const health = await opts.gatewayHealth?.(url);
    if (health) extra.push(databaseReachability(health, url, cluster));
    else if (cluster) extra.push(cluster);
    const deployments = desired.filter((o) => o.kind === 'Deployment').map((d) => live.find((o) => objectKey(o) === objectKey(d)));
    const gw = live.find((o) => o.kind === 'Deployment' && o.metadata.name === childName(ts, 'gateway'));
    const scale = {
      replicas: (gw?.status as { replicas?: number } | undefined)?.replicas ?? 0,
      selector: Object.entries(selectorLabels(ts, 'gateway'))
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    };
    const status = await writeStatus(ts, deployments.map((d) => (d ? observedDeployment(d) : undefined)), undefined, extra, keys.keyChecksums, scale);
    const ready = status.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    // A daemon's probe line reaches its Event after the pod turned unready: look again soon.
    const firewallDown = fw >= 0 && extra[fw]!.status === 'False';
    return { requeueAfterMs: ready && !firewallDown ? resyncMs : notReadyRecheckMs };
  };
}
