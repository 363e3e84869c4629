/**
 * Leader election on a coordination.k8s.io/v1 Lease with compare-and-swap on resourceVersion:
 * only one replica reconciles; a stale write gets 409 and loses. On stop the Lease is released so
 * a successor takes over at once instead of after the lease duration.
 */
import { CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { apiClient, describeError, isConflict, isNotFound, withDeadline } from './kube.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds?: number;
  /** how often to renew (leader) or retry (candidate) */
  retryPeriodMs?: number;
  /** deadline of a Lease request of a candidate (a leader's are bounded by its renew window) */
  apiTimeoutMs?: number;
  log: Logger;
  /** A rejection means "cannot lead": the elector steps down, releases the Lease and sits out. */
  onStartedLeading: () => void | Promise<void>;
  onStoppedLeading: () => void | Promise<void>;
  /** how long a replica that failed to start leading stays out of the election (default: one lease duration) */
  cooldownMs?: number;
}

export interface LeaderElector {
  isLeader(): boolean;
  stop(): Promise<void>;
}

/** Read responses hold strings; the serializer needs a V1MicroTime (6 fractional digits) to write one. */
const micro = (v: unknown): V1MicroTime => new V1MicroTime(v as string);
const time = (v: unknown): number => (v ? new Date(v as string).getTime() : 0);

/** Pure: may `identity` take or keep this Lease at `now`? */
export function canAcquire(lease: V1Lease, identity: string, now: number): boolean {
  const spec = lease.spec ?? {};
  if (!spec.holderIdentity || spec.holderIdentity === identity) return true;
  const renewed = time(spec.renewTime ?? spec.acquireTime);
  return renewed + (spec.leaseDurationSeconds ?? 15) * 1000 < now;
}

export function startLeaderElection(kc: KubeConfig, opts: LeaderElectionOptions): LeaderElector {
  const duration = opts.leaseDurationSeconds ?? 15;
  // A leader that has not renewed for 2/3 of the duration steps down (client-go's renew deadline),
  // a third before a standby may take the Lease. Its Lease requests are aborted at that moment, so a
  // renewal that hangs cannot keep it leading past it.
  const renewWindowMs = (duration * 1000 * 2) / 3;
  const api = apiClient(kc, CoordinationV1Api, opts.apiTimeoutMs ?? duration * 1000);
  const retry = opts.retryPeriodMs ?? 2000;
  const { namespace, name, identity, log } = opts;
  let leader = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let lastRenew = 0;
  let transitions: Promise<void> = Promise.resolve();
  /** the renewal round in flight (never rejects): stop() waits for it before releasing */
  let ticking: Promise<void> = Promise.resolve();
  /** after a failed start: no campaigning before this time, so a working standby takes over */
  let cooldownUntil = 0;
  const cooldownMs = opts.cooldownMs ?? duration * 1000;

  const spec = (acquire: boolean, prev?: V1Lease) => ({
    holderIdentity: identity,
    leaseDurationSeconds: duration,
    acquireTime: acquire || !prev?.spec?.acquireTime ? new V1MicroTime() : micro(prev.spec.acquireTime),
    renewTime: new V1MicroTime(),
    leaseTransitions: (prev?.spec?.leaseTransitions ?? 0) + (acquire && prev ? 1 : 0),
  });

  let lastObstacle = '';
  async function tryAcquireOrRenew(): Promise<boolean> {
    if (!leader && Date.now() < cooldownUntil) {
      lastObstacle = 'cooling down after a failed start';
      return false;
    }
    const renewBy = lastRenew + renewWindowMs;
    // a candidate's requests keep the client's own deadline
    const call = leader ? () => withDeadline(renewBy - Date.now()) : () => undefined;
    let lease: V1Lease | undefined;
    try {
      lease = await api.readNamespacedLease({ name, namespace }, call());
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!lease) {
      await api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: spec(true) } }, call());
      return true;
    }
    if (!canAcquire(lease, identity, Date.now())) {
      lastObstacle = `held by ${lease.spec?.holderIdentity} (renewed ${String(lease.spec?.renewTime)})`;
      return false;
    }
    const acquire = lease.spec?.holderIdentity !== identity;
    // replace carries metadata.resourceVersion: a concurrent writer makes this 409.
    await api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: spec(acquire, lease) } }, call());
    return true;
  }

  /** Hand the Lease back the way client-go does it: no holder, a 1 s duration so nobody waits. */
  async function release(): Promise<void> {
    try {
      const lease = await api.readNamespacedLease({ name, namespace });
      if (lease.spec?.holderIdentity !== identity) return;
      await api.replaceNamespacedLease({
        name,
        namespace,
        body: {
          ...lease,
          spec: {
            ...lease.spec,
            holderIdentity: undefined,
            leaseDurationSeconds: 1,
            acquireTime: lease.spec.acquireTime ? micro(lease.spec.acquireTime) : undefined,
            renewTime: new V1MicroTime(),
          },
        },
      });
    } catch (err) {
      log.warn({ err: describeError(err) }, 'could not release lease');
    }
  }

  // A leader whose controller cannot start would otherwise renew the Lease while reconciling nothing
  // (the zombie leader): it gives the Lease up instead and sits out one cooldown.
  async function startOrStepDown(): Promise<void> {
    try {
      await opts.onStartedLeading();
    } catch (err) {
      cooldownUntil = Date.now() + cooldownMs;
      log.error({ err: describeError(err), cooldownMs }, 'could not start leading; releasing the lease');
      if (!leader) return;
      leader = false;
      await Promise.resolve(opts.onStoppedLeading()).catch((e: unknown) => log.error({ err: e }, 'onStoppedLeading failed'));
      if (!stopped) await release();
    }
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    let ok: boolean;
    try {
      // counted from before the request: the renewTime it writes, which standbys go by, is later
      const attempt = Date.now();
      ok = await tryAcquireOrRenew();
      if (ok) lastRenew = attempt;
    } catch (err) {
      lastObstacle = describeError(err);
      if (!isConflict(err)) log.warn({ err: lastObstacle }, 'lease update failed');
      // A leader that cannot renew keeps leading only within its renew window.
      ok = leader && Date.now() < lastRenew + renewWindowMs;
    }
    if (stopped) return;
    // Callbacks run outside the renew loop (serialized): a slow controller start must not delay
    // renewals past the lease duration.
    if (ok && !leader) {
      leader = true;
      log.info({ lease: `${namespace}/${name}`, identity }, 'became leader');
      transitions = transitions.then(startOrStepDown);
    } else if (!ok && leader) {
      leader = false;
      log.warn({ lease: `${namespace}/${name}`, identity, reason: lastObstacle }, 'lost leadership');
      transitions = transitions.then(opts.onStoppedLeading).catch((err: unknown) => log.error({ err }, 'onStoppedLeading failed'));
    }
    if (!stopped) {
      // Candidates retry with jitter (client-go's factor 1.2): replicas that lost the Lease together do
      // not all ask again at the same moment. A leader renews on the plain period.
      timer = setTimeout(
        () => {
          ticking = tick();
        },
        leader ? retry : retry * (1 + Math.random() * 1.2),
      );
    }
  }

  ticking = tick();

  return {
    isLeader: () => leader,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      // a renewal still in flight would write the Lease between the release's read and its write:
      // the release would get 409 and the Lease would stay held until it expires
      await ticking;
      await transitions;
      if (!leader) return;
      leader = false;
      await opts.onStoppedLeading();
      await release();
    },
  };
}
