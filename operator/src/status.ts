/** Pure status computation: observed children -> TaskService.status (conditions in metav1.Condition shape). */
import type { Condition, TaskServiceStatus } from './types.ts';

export interface ObservedDeployment {
  name: string;
  generation?: number;
  spec?: { replicas?: number };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; readyReplicas?: number; availableReplicas?: number };
}

export interface StatusInput {
  generation: number;
  previous: TaskServiceStatus | undefined;
  /** the Deployments the TaskService should have, as read back (missing ones count as not ready) */
  deployments: (ObservedDeployment | undefined)[];
  /** a reconcile failure, if any: makes the resource Degraded */
  error?: { reason: string; message: string };
  cronJobApiVersion?: string;
  /** the gateway's pods and selector, for the /scale subresource */
  gateway?: { replicas: number; selector: string };
  /** checksums of the generated keys (keys.ts), carried into status */
  keyChecksums?: Record<string, string>;
  /** more conditions the plan reports (e.g. Firewall), kept in the given order after the standard three */
  extra?: { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string }[];
  now: Date;
}

export const deploymentRolledOut = (d: ObservedDeployment): boolean => {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  return (s.observedGeneration ?? 0) >= (d.generation ?? 0) && (s.updatedReplicas ?? 0) >= want && (s.replicas ?? 0) <= want;
};

/**
 * Serving at full strength, whether or not a rollout is under way: with maxUnavailable 0 the old pods
 * keep serving until new ones are ready, so a rollout is Progressing, not a loss of readiness.
 */
export const deploymentAvailable = (d: ObservedDeployment): boolean => {
  const available = d.status?.availableReplicas ?? 0;
  // A service scaled to 0 serves nothing: not available, however the numbers compare.
  return available > 0 && available >= (d.spec?.replicas ?? 1);
};

function condition(prev: Condition[] | undefined, next: Omit<Condition, 'lastTransitionTime'>, now: Date): Condition {
  const old = prev?.find((c) => c.type === next.type);
  // lastTransitionTime moves only when the status flips (metav1.Condition semantics).
  const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z');
  return { ...next, lastTransitionTime };
}

export function computeStatus(input: StatusInput): TaskServiceStatus {
  const { generation, previous, deployments, error, now } = input;
  const prev = previous?.conditions;
  const present = deployments.filter((d): d is ObservedDeployment => d !== undefined);
  const available = present.filter(deploymentAvailable);
  const notAvailable = deployments.length - available.length;
  const rollingOut = present.filter((d) => !deploymentRolledOut(d)).map((d) => d.name);
  const missing = deployments.length - present.length;
  const g = { observedGeneration: generation };

  const ready = error
    ? { status: 'False' as const, reason: error.reason, message: error.message }
    : notAvailable === 0
      ? { status: 'True' as const, reason: 'AllServicesAvailable', message: `all ${deployments.length} services available` }
      : {
          status: 'False' as const,
          reason: 'ServicesUnavailable',
          message: `${notAvailable} of ${deployments.length} services not available: ${deployments
            .map((d, i) => (d && deploymentAvailable(d) ? undefined : d ? `${d.name}${d.spec?.replicas === 0 ? ' (0 replicas)' : ''}` : `#${i}`))
            .filter(Boolean)
            .join(', ')}`,
        };
  const progressing =
    rollingOut.length > 0 || missing > 0
      ? { status: 'True' as const, reason: 'RollingOut', message: `rolling out: ${rollingOut.join(', ') || `${missing} missing`}` }
      : { status: 'False' as const, reason: 'RolloutComplete', message: 'every Deployment runs the current template' };
  const degraded = error
    ? { status: 'True' as const, reason: error.reason, message: error.message }
    : { status: 'False' as const, reason: 'ReconcileSucceeded', message: 'children applied' };

  return {
    observedGeneration: generation,
    readyServices: `${available.length}/${deployments.length}`,
    // kept as they were when this status was computed without the gateway (an error)
    ...(input.gateway
      ? { gatewayReplicas: input.gateway.replicas, gatewaySelector: input.gateway.selector }
      : previous?.gatewayReplicas !== undefined
        ? { gatewayReplicas: previous.gatewayReplicas, gatewaySelector: previous.gatewaySelector }
        : {}),
    ...(input.cronJobApiVersion ? { cronJobApiVersion: input.cronJobApiVersion } : {}),
    ...(input.keyChecksums && Object.keys(input.keyChecksums).length ? { keyChecksums: input.keyChecksums } : {}),
    conditions: [
      condition(prev, { type: 'Ready', ...ready, ...g }, now),
      condition(prev, { type: 'Progressing', ...progressing, ...g }, now),
      condition(prev, { type: 'Degraded', ...degraded, ...g }, now),
      ...(input.extra ?? []).map((c) => condition(prev, { ...c, ...g }, now)),
    ],
  };
}

/** Conditions whose status flipped (or appeared): each becomes an Event. */
export function transitions(previous: TaskServiceStatus | undefined, next: TaskServiceStatus): Condition[] {
  return (next.conditions ?? []).filter((c) => previous?.conditions?.find((p) => p.type === c.type)?.status !== c.status);
}

/** Whether writing `next` would change anything the API server stores (avoids status write loops). */
export function statusChanged(previous: TaskServiceStatus | undefined, next: TaskServiceStatus): boolean {
  return canonical(previous ?? {}) !== canonical(next);
}

/** JSON with sorted keys: the API server does not keep our key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The Database condition of a managed database, read from the CloudNativePG Cluster's status. */
export function databaseCondition(cluster: { metadata: { name: string }; spec?: unknown; status?: unknown } | undefined, retained: boolean) {
  const policy = retained
    ? 'deletionPolicy Retain: deleting the TaskService keeps it'
    : 'deletionPolicy Delete: deleting the TaskService deletes it and its volumes';
  if (!cluster) return { type: 'Database', status: 'False' as const, reason: 'ClusterMissing', message: `no CloudNativePG Cluster yet; ${policy}` };
  const spec = (cluster.spec ?? {}) as { instances?: number };
  const st = (cluster.status ?? {}) as { readyInstances?: number; phase?: string; conditions?: { type: string; status: string; message?: string }[] };
  const want = spec.instances ?? 1;
  const readyCond = st.conditions?.find((c) => c.type === 'Ready');
  const ready = readyCond ? readyCond.status === 'True' : (st.readyInstances ?? 0) >= want;
  const summary = `Cluster ${cluster.metadata.name}: ${st.readyInstances ?? 0}/${want} instances ready${st.phase ? `, ${st.phase}` : ''}`;
  return ready
    ? { type: 'Database', status: 'True' as const, reason: 'ClusterReady', message: `${summary}; ${policy}` }
    : { type: 'Database', status: 'False' as const, reason: 'ClusterNotReady', message: `${summary}${readyCond?.message ? ` (${readyCond.message})` : ''}; ${policy}` };
}

/** What the operator reads of a firewall pod: its node, whether it is ready, and the newest readiness-probe line the kubelet recorded. */
export interface FirewallPodReport {
  node: string | undefined;
  ready: boolean;
  /** `<Reason>: <message>` as ready.ts printed it (services/firewall), when an Event still holds it */
  probe?: string;
}

/** The one-word reason ready.ts puts first (services/firewall/src/core.ts InForceReason). */
const PROBE_LINE = /^([A-Z][A-Za-z]+): ([\s\S]*)$/;

/**
 * The Firewall condition once the DaemonSet exists: True only when every node it should run on has a
 * ready daemon of the current template, where ready means the daemon's own readiness answer (ready.ts:
 * the kernel enforces confirmed rules built from the ConfigMap's options). Otherwise False, with the
 * daemons' own reason when they agree on one (RolledBack, Pending, KernelDiffers…) and each node named.
 */
export function firewallCondition(
  ds: { metadata: { generation?: number }; status?: unknown } | undefined,
  pods: FirewallPodReport[],
  /** what the plan deployed, e.g. "on every node except control-plane nodes; 5 cluster networks whitelisted" */
  deployed: string,
): { type: 'Firewall'; status: 'True' | 'False'; reason: string; message: string } {
  const off = (reason: string, message: string) => ({ type: 'Firewall' as const, status: 'False' as const, reason, message });
  if (!ds) return off('DaemonSetMissing', 'the firewall DaemonSet does not exist yet');
  const st = (ds.status ?? {}) as { observedGeneration?: number; desiredNumberScheduled?: number; numberReady?: number; updatedNumberScheduled?: number };
  if ((st.observedGeneration ?? 0) < (ds.metadata.generation ?? 0)) return off('RollingOut', `${deployed}; the DaemonSet controller has not taken the current template yet`);
  const desired = st.desiredNumberScheduled ?? 0;
  if (desired === 0) return off('NoNodes', `${deployed}; but no node runs it (none matches)`);
  const ready = st.numberReady ?? 0;
  const updated = st.updatedNumberScheduled ?? 0;
  if (ready >= desired && updated >= desired) {
    return { type: 'Firewall', status: 'True', reason: 'Enforcing', message: `${deployed}; all ${desired} daemons enforce the confirmed rules of the current configuration` };
  }
  const failing = pods.filter((p) => !p.ready);
  const reasons = new Set(failing.map((p) => PROBE_LINE.exec(p.probe ?? '')?.[1] ?? 'NotReady'));
  const reason = reasons.size === 1 && !reasons.has('NotReady') ? [...reasons][0]! : 'NotEnforcing';
  const nodes = failing
    .map((p) => `${p.node ?? 'unscheduled'}: ${p.probe ?? 'not ready (no readiness report yet)'}`)
    .sort()
    .join('; ');
  const behind = updated < desired ? ` (${desired - updated} still run the previous template)` : '';
  return off(reason, `${deployed}; ${desired - Math.min(ready, updated, desired)} of ${desired} nodes do not enforce the current configuration${behind}${nodes ? `: ${nodes}` : ''}`);
}

/** What the gateway's GET /api/health answered (the spec's database check), or why it was not asked. */
export type GatewayHealth = { code: number; status?: string } | { unavailable: string };

type DatabaseCondition = { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string };

/**
 * The Database condition: whether the services reach the database, as the gateway's /api/health
 * reports it (200 `ok` or 503 `error`, spec), combined with the CloudNativePG Cluster's own condition
 * for a managed database (a Cluster not ready stays the reason; a ready one the services cannot reach
 * is `Unreachable`). When the health endpoint cannot be asked, an external database is `Unknown` and
 * a managed one keeps what its Cluster says.
 */
export function databaseReachability(health: GatewayHealth, url: string, cluster?: ReturnType<typeof databaseCondition>): DatabaseCondition {
  if ('unavailable' in health) {
    if (cluster) return cluster;
    return { type: 'Database', status: 'Unknown', reason: 'NotChecked', message: `not checked: ${health.unavailable}` };
  }
  const said = `GET ${url} answered ${health.code}${health.status ? ` (status ${health.status})` : ''}`;
  if (health.code === 200 && health.status === 'ok') {
    if (cluster && cluster.status !== 'True') return cluster;
    return cluster
      ? { ...cluster, message: `${cluster.message}; the services reach it (${said})` }
      : { type: 'Database', status: 'True', reason: 'Reachable', message: `the services reach the database (${said})` };
  }
  if (cluster && cluster.status !== 'True') return cluster;
  if (health.code === 503) {
    return { type: 'Database', status: 'False', reason: 'Unreachable', message: `the services cannot reach the database: ${said}${cluster ? `; ${cluster.message}` : ''}` };
  }
  return cluster ?? { type: 'Database', status: 'Unknown', reason: 'NotChecked', message: `not checked: ${said}, not the health answer the spec defines` };
}
