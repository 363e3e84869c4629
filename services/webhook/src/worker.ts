import { notificationRequested } from '@tasksvc/proto';
import { createBatcher, continueTrace, wakeTimer, enqueueEvent, secretBox, SecretUnreadable, type SealedColumn, type SecretBox, inSpan, inTransaction, MAX_SOCKETS_PER_HOST, OutboundError, parseRetryAfter, type Config, type Logger, type Outbound, type Pool } from '@tasksvc/runtime';
import { claimDue, completeAttempts, completeMany, disableEndpoint, prune, release, type ClaimedDelivery, type Completion } from './db/deliveries.ts';
import { deliveryHeaders, failingTooLong, judge, maxAttempts, nextDelaySec, type AttemptResult } from './domain/delivery.ts';
import { createShares, type ShareLimits } from './domain/shares.ts';
import { webhookMetrics } from './metrics.ts';

export interface WorkerDeps {
  pool: Pool;
  outbound: Outbound;
  config: Config;
  log: Logger;
  /** called after an owner notification was written to the outbox */
  onNotify?: () => void;
  /** records a success or a manual attempt (one statement); the worker passes a batching one */
  record?: (c: Completion) => Promise<boolean>;
  /** records a failed attempt (see recordFailures); the worker passes a batching one */
  recordFailure?: (f: Failure) => Promise<boolean>;
}

async function recordOne(pool: Pool, c: Completion): Promise<boolean> {
  return (await completeMany(pool, [c]))[0]!;
}

/**
 * Decrypted signing secrets by stored form. AES-GCM decryption (key import, cipher set-up) cost
 * more than signing and sending together; the stored form changes whenever the secret or the
 * key does, so an entry never goes stale. Bounded: cleared when full.
 */
const secrets = new WeakMap<SecretBox, Map<string, string>>();
const MAX_CACHED_SECRETS = 10_000;

/** The signing secrets' box: sealed under SECRETS_KEYRING (keyring.ts), never under TOTP_ENCRYPTION_KEY. */
export function signingSecrets(config: Config): SecretBox {
  return secretBox(config, 'webhook', 'endpoint-secret');
}

/** Where signing secrets are kept (re-sealed after a SECRETS_KEYRING rotation). */
export const SEALED_SIGNING_SECRETS: SealedColumn = { table: 'webhook.endpoints', idColumn: 'id', column: 'secret_enc' };

function readSecret(box: SecretBox, stored: string): string {
  let cache = secrets.get(box);
  if (!cache) secrets.set(box, (cache = new Map()));
  let secret = cache.get(stored);
  if (secret === undefined) {
    secret = box.open(stored);
    if (cache.size >= MAX_CACHED_SECRETS) cache.clear();
    cache.set(stored, secret);
  }
  return secret;
}

/** A claimed delivery is reclaimed by any worker when its lease runs out: twice the attempt time limit plus 5 s. */
export function leaseMs(config: Config): number {
  return config.WEBHOOK_TIMEOUT_SECONDS * 2_000 + 5_000;
}
const RETENTION_DAYS = 30;

/** How an attempt's receiver answered, for the worker's shares: when, and whether it timed out. */
export interface Answer {
  ms: number;
  timedOut: boolean;
}

/**
 * One attempt of one leased delivery: send, judge the answer, and record the outcome, the attempt,
 * the next attempt time and the endpoint's health, only while the lease holds. Resolves with the
 * next attempt's time when one was recorded (the worker wakes for it), else null.
 */
export async function attemptDelivery(deps: WorkerDeps, d: ClaimedDelivery, onAnswered?: (a: Answer) => void): Promise<Date | null> {
  const { config } = deps;
  const schedule = config.WEBHOOK_RETRY_SCHEDULE;
  const startedAt = new Date();
  const t0 = performance.now();
  let result: AttemptResult;
  let error: string | null = null;
  let secret: string | null = null;
  let secretProblem: string | null = null;
  if (d.secretEnc) {
    try {
      secret = readSecret(signingSecrets(config), d.secretEnc);
    } catch (err) {
      if (!(err instanceof SecretUnreadable)) throw err;
      secretProblem = `the signing secret cannot be decrypted: ${err.message}; set the secret again`;
    }
  }
  if (secretProblem) {
    result = { errorKind: 'invalid_url' };
    error = secretProblem;
  } else {
    try {
      const res = await deps.outbound.request({
        url: d.url,
        method: 'POST',
        headers: deliveryHeaders({ deliveryId: d.id, event: d.event, body: d.body, secret, attempt: d.attempts }),
        body: d.body,
        timeoutMs: config.WEBHOOK_TIMEOUT_SECONDS * 1000,
        maxResponseBytes: 2048,
      });
      result = { status: res.status, retryAfterSec: parseRetryAfter(res.headers['retry-after']) };
    } catch (err) {
      if (!(err instanceof OutboundError)) throw err;
      result = { errorKind: err.kind };
      error = err.message;
    }
  }
  const elapsedMs = performance.now() - t0;
  // the receiver is done with this attempt: its slot can go to the next one while the outcome is recorded
  onAnswered?.({ ms: elapsedMs, timedOut: result.errorKind === 'timeout' });
  const durationMs = Math.round(elapsedMs);
  const verdict = judge(result);
  webhookMetrics.attempts.observe({ outcome: verdict.kind }, elapsedMs / 1000);
  const limit = d.maxAttempts ?? maxAttempts(schedule);
  let status: 'pending' | 'delivered' | 'failed' = 'failed';
  let nextAttemptAt: Date | null = null;
  if (verdict.kind === 'delivered') status = 'delivered';
  else if (verdict.kind === 'retry') {
    const delay = d.attempts < limit ? nextDelaySec(schedule, d.attempts, Math.random(), verdict.minDelaySec) : null;
    if (delay !== null) {
      status = 'pending';
      nextAttemptAt = new Date(Date.now() + delay * 1000);
    }
  }
  if (verdict.kind !== 'delivered') error = error ?? verdict.reason;
  if (status === 'failed' && verdict.kind === 'retry' && !d.manual) error = `${error}; gave up after ${d.attempts} attempts`;

  const completion: Completion = { id: d.id, lease: d.lease, status, outcome: verdict.kind, responseStatus: result.status ?? null, error, durationMs, startedAt, nextAttemptAt };
  if (verdict.kind === 'delivered' || d.manual) {
    // one statement: outcome, attempt log and (for a success) the endpoint's health
    if (verdict.kind === 'delivered' && !d.manual) completion.healthyEndpoint = d.endpointId;
    if (!(await (deps.record ?? ((c) => recordOne(deps.pool, c)))(completion))) return null;
    webhookMetrics.finished(status);
    return nextAttemptAt;
  }
  const failure: Failure = { completion: { ...completion, failingEndpoint: d.endpointId }, gone: verdict.kind === 'gone' ? verdict.reason : null };
  if (!(await (deps.recordFailure ?? ((f) => recordFailures(deps, [f]).then((r) => r[0]!)))(failure))) return null;
  webhookMetrics.finished(status);
  return nextAttemptAt;
}

/** A failed attempt of a delivery (not a manual one): its completion, and the reason to disable its endpoint now (410 Gone). */
export interface Failure {
  completion: Completion & { failingEndpoint: string };
  gone: string | null;
}

/**
 * Record failed attempts together, in one transaction: their outcomes and the failure streaks of
 * their endpoints (one statement), then each endpoint that answered 410 Gone or has failed longer
 * than WEBHOOK_DISABLE_AFTER_HOURS is disabled and its owner notified (through the outbox, so
 * exactly once per streak). A receiver that hangs costs the same few statements for a whole wave of
 * time-outs as one: a transaction per failure took a database connection each, and a wave of them
 * queued every other user's claims and completions behind it. Returns, per failure, whether it was
 * recorded (false when the lease was lost).
 */
export async function recordFailures(deps: Pick<WorkerDeps, 'pool' | 'config' | 'onNotify'>, failures: readonly Failure[]): Promise<boolean[]> {
  const { config } = deps;
  let notified = false;
  const recorded = await inTransaction(deps.pool, async (c) => {
    const results = await completeAttempts(
      c,
      failures.map((f) => f.completion),
    );
    const toDisable = new Map<string, { reason: string; failingSince: Date }>();
    const now = new Date();
    results.forEach((r, i) => {
      if (!r.failing) return;
      const endpointId = failures[i]!.completion.failingEndpoint;
      const reason =
        failures[i]!.gone ??
        (r.failing.enabled && failingTooLong(r.failing.failingSince, now, config.WEBHOOK_DISABLE_AFTER_HOURS) ? `every delivery failed for ${config.WEBHOOK_DISABLE_AFTER_HOURS} hours` : null);
      if (reason && !toDisable.has(endpointId)) toDisable.set(endpointId, { reason, failingSince: r.failing.failingSince });
    });
    for (const [endpointId, { reason, failingSince }] of toDisable) {
      const disabled = await disableEndpoint(c, endpointId, reason);
      if (!disabled) continue;
      await enqueueEvent(c, 'webhook', notificationRequested, {
        userId: disabled.userId,
        title: 'Webhook endpoint disabled',
        body: `Task events are no longer sent to ${disabled.url}: ${reason}. Fix the receiver, then enable the endpoint again in the integrations settings.`,
        url: '/settings/integrations',
        tag: 'webhook-disabled',
        dedupeKey: `webhook-disabled:${endpointId}:${failingSince.toISOString()}`,
      });
      notified = true;
    }
    return results.map((r) => r.recorded);
  });
  if (notified) deps.onNotify?.();
  return recorded;
}

export interface DeliveryWorker {
  /** rows may be due now: for these receiving hosts (rows ingested) or for any (a manual retry) */
  kick(hosts?: readonly string[]): void;
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** claimed rows held at most (running, or waiting for their host) */
  concurrency?: number;
  /** rows one user may hold: its share of the worker */
  perUser?: number;
  /** requests in flight to one receiving host */
  perHost?: number;
  /** requests in flight to a receiving host that has not answered in time (yet, or lately) */
  unprovenPerHost?: number;
  /** an answer this late makes its host unproven (default: a third of the time limit, at most 5 s) */
  slowAfterMs?: number;
  /** the longest the worker sleeps without a claim (default MAX_SLEEP_MS) */
  maxSleepMs?: number;
}

/**
 * The worker claims when rows may have come due: at once when it is told of new rows (its consumer
 * ingested them, an endpoint was enabled, a claimed row was given back), at the next attempt time of
 * each retry it recorded, and otherwise at most this long after its last claim. The longest sleep
 * bounds what a missed wake-up costs: rows another replica ingested or scheduled and could not
 * claim (it died, or it is full while this one is idle), and rows whose worker died (due again when
 * their lease runs out, itself 35 s by default). 15 s: an idle worker claims once in 15 s (four
 * times a second before the wake timer, once in 5 s after it: still one of an idle service's most
 * frequent wake-ups, and a statement for PostgreSQL each time; tools/bench/idle.ts), and a row is
 * never more than 15 s late because of a replica it did not land on, which happens only when that
 * replica died or is full (its own rows it claims at once, its retries at their recorded times).
 */
export const MAX_SLEEP_MS = 15_000;
/** After a failed claim (the database away), the next one is tried this soon. */
const RETRY_MS = 1_000;

/**
 * The delivery loop: keeps up to `concurrency` claimed deliveries, claiming due rows from the
 * database in batches (so replicas share the work and a killed worker's rows are reclaimed after
 * the lease). The claims are fair (docs/webhooks.md, Fair scheduling): round-robin between users,
 * each user holding at most `perUser` rows, each receiving host (however many endpoints of however
 * many users point there) at most `perHost` requests once it has answered in time, and
 * `unprovenPerHost` before that or after a time-out or a late answer (domain/shares.ts), so
 * receivers that hang hold a few slots each, never the worker or the keep-alive sockets to them.
 * A slot is free again as soon as the receiver has answered, while the outcome is still being
 * recorded; a host's rows beyond its budget (it answered late after the claim) wait here for a free slot.
 */
export function startDeliveryWorker(deps: WorkerDeps & WorkerOptions): DeliveryWorker {
  // claims and completions grow with the window: at 512 a burst to 10 endpoints went out in a third of
  // the statements of 128, and 15-25 % faster, in tools/bench/webhooks.ts
  const concurrency = deps.concurrency ?? 512;
  // as many as the agent keeps sockets to one host (more would only wait there, their timeouts running),
  // and at most half the worker: one busy endpoint gets enough requests in flight to be served at
  // loopback speed (at 32, its deliveries went out in claims and completions a third as large, and 12 % slower)
  const perHost = deps.perHost ?? Math.max(1, Math.min(MAX_SOCKETS_PER_HOST, Math.floor(concurrency / 2)));
  const attemptMs = deps.config.WEBHOOK_TIMEOUT_SECONDS * 1000;
  // half the worker: if one user's receivers, quick so far, all start hanging at once (10 endpoints on
  // 10 hosts), the other half is still everyone else's
  const perUser = deps.perUser ?? Math.max(perHost, Math.floor(concurrency / 2));
  const limits: ShareLimits = {
    perUser,
    // a busy user's rows are claimed a quarter of its share at a time, not one per finished attempt
    userBatch: Math.max(1, Math.floor(perUser / 4)),
    perHost,
    unprovenPerHost: Math.min(perHost, deps.unprovenPerHost ?? 8),
    slowAfterMs: deps.slowAfterMs ?? Math.min(5_000, attemptMs / 3),
    provenForMs: 10 * 60_000,
  };
  const shares = createShares(limits);
  const lease = leaseMs(deps.config);
  // finished attempts are recorded together: one statement per batch instead of one per delivery
  const batcher = createBatcher((cs: Completion[]) => completeMany(deps.pool, cs), concurrency);
  const failures = createBatcher((fs: Failure[]) => recordFailures(deps, fs), concurrency);
  const attemptDeps: WorkerDeps = { ...deps, record: (c) => batcher.add(c), recordFailure: (f) => failures.add(f) };
  const inFlight = new Set<Promise<void>>();
  /** per receiving host (ClaimedDelivery.host): attempts running, and claimed rows waiting for one of its slots */
  const hosts = new Map<string, { running: number; waiting: { row: ClaimedDelivery; claimedAt: number }[] }>();
  let held = 0;
  let stopped = false;
  let pumping = false;
  let again = false;
  let lastPrune = 0;
  /** bumped whenever rows a claim could take may have come due: a kick or the poll */
  let dueGeneration = 0;
  /**
   * The users and hosts with no room at the last claim that took every row it could (fewer than it
   * asked for, no host cut at its room, no user at its share), in the generation it ran in. Until
   * rows may have come due, or one of them has room again, another claim finds nothing: with one
   * busy receiver every finished attempt ran such a claim (a third of the claims in the bench), and
   * at a trickle every claim was followed by one. New rows for those hosts alone change nothing
   * while they stay full.
   */
  let drained: { full: Set<string>; generation: number } | undefined;

  const letGo = (row: ClaimedDelivery) => {
    held--;
    shares.give(row);
  };

  /** Start the host's waiting rows while it has free slots; forget it once idle. */
  const drain = (hostKey: string): void => {
    const host = hosts.get(hostKey)!;
    while (host.running < shares.budget(hostKey, Date.now()) && host.waiting.length > 0) {
      const { row, claimedAt } = host.waiting.shift()!;
      // a row that waited so long its lease could run out mid-attempt goes back instead (no duplicate send)
      if (stopped || Date.now() + attemptMs > claimedAt + lease) {
        letGo(row);
        void release(deps.pool, [row])
          .then(() => !stopped && comeDue())
          .catch((err: unknown) => deps.log.warn({ err, deliveryId: row.id }, 'could not release a delivery; it is retried when its lease expires'));
        continue;
      }
      host.running++;
      let slotHeld = true;
      const freeSlot = (answer?: Answer) => {
        if (!slotHeld) return;
        slotHeld = false;
        if (answer) shares.answered(hostKey, answer.ms, answer.timedOut, Date.now());
        host.running--;
        drain(hostKey);
      };
      // tracing on: each attempt is a span in the trace of the event it delivers
      const attempt = () => inSpan('deliver webhook', 'client', { 'webhook.delivery.id': row.id, 'webhook.attempt': row.attempts, 'webhook.event': row.event }, () => attemptDelivery(attemptDeps, row, freeSlot));
      const p: Promise<void> = continueTrace(row.traceparent, attempt)
        // a retry recorded: wake for it (replicas that did not record it find it at their longest sleep)
        .then((next) => {
          if (next) wake.wakeAt(next.getTime());
        })
        .catch((err: unknown) => deps.log.warn({ err, deliveryId: row.id }, 'delivery attempt failed to record; the lease expires and it is retried'))
        .finally(() => {
          inFlight.delete(p);
          letGo(row);
          freeSlot();
          void pump();
        });
      inFlight.add(p);
    }
    if (host.running === 0 && host.waiting.length === 0) hosts.delete(hostKey);
  };

  const pump = async (): Promise<void> => {
    if (stopped) return;
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        // refill in batches: once a quarter of the worker is free (and a user once a quarter of its
        // share is, see ShareLimits.userBatch), not once per finished attempt; rows a user holds at
        // its share (receivers that hang) never keep another user's rows from being claimed
        while (!stopped && concurrency - held >= Math.max(1, Math.floor(concurrency / 4))) {
          const rooms = shares.rooms(Date.now());
          if (drained?.generation === dueGeneration && [...drained.full].every((k) => rooms.full.has(k))) break;
          const generation = dueGeneration;
          const claimedAt = Date.now();
          const limit = concurrency - held;
          const rows = await claimDue(deps.pool, { limit, leaseMs: lease, perUser: limits.perUser, users: rooms.users, perHost: limits.unprovenPerHost, hosts: rooms.hosts });
          const byUser = new Map<string, { n: number; share: number }>();
          const byHost = new Map<string, number>();
          for (const row of rows) {
            const u = byUser.get(row.userId) ?? { n: 0, share: row.share };
            u.n++;
            byUser.set(row.userId, u);
            byHost.set(row.host, (byHost.get(row.host) ?? 0) + 1);
          }
          // took every row it could: fewer than asked, no user at its share and no host at its room
          const hostRoom = (host: string) => rooms.hosts.get(host) ?? limits.unprovenPerHost;
          if (rows.length < limit && [...byUser.values()].every((u) => u.n < u.share) && [...byHost].every(([h, n]) => n < hostRoom(h))) drained = { full: rooms.full, generation };
          if (rows.length === 0) break;
          held += rows.length;
          for (const row of rows) {
            shares.take(row);
            let host = hosts.get(row.host);
            if (!host) hosts.set(row.host, (host = { running: 0, waiting: [] }));
            host.waiting.push({ row, claimedAt });
          }
          for (const key of byHost.keys()) drain(key);
        }
      } while (again && !stopped);
      if (Date.now() - lastPrune > 3_600_000) {
        lastPrune = Date.now();
        await prune(deps.pool, RETENTION_DAYS);
      }
      wake.wakeAt(Infinity);
    } catch (err) {
      deps.log.warn({ err: (err as Error).message }, 'delivery worker round failed');
      wake.wakeAt(Date.now() + RETRY_MS);
    } finally {
      pumping = false;
    }
  };

  const comeDue = (hosts?: readonly string[]) => {
    // rows for hosts that were full at the last drained claim change nothing while they stay full
    if (!hosts || !hosts.every((h) => drained?.full.has(`host:${h}`))) dueGeneration++;
    void pump();
  };
  const wake = wakeTimer(() => comeDue(), deps.maxSleepMs ?? MAX_SLEEP_MS);
  void pump();
  return {
    kick: comeDue,
    async stop() {
      stopped = true;
      wake.stop();
      // rows still waiting for a slot go back now rather than when their lease runs out
      const waiting = [...hosts.values()].flatMap((h) => h.waiting.splice(0).map((w) => w.row));
      waiting.forEach(letGo);
      if (waiting.length) await release(deps.pool, waiting).catch((err: unknown) => deps.log.warn({ err }, 'could not release waiting deliveries; they are retried when their leases expire'));
      await Promise.allSettled([...inFlight]);
    },
  };
}
