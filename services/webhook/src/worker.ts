import { notificationRequested } from '@tasksvc/proto';
import { continueTrace, decryptSecret, enqueueEvent, inSpan, inTransaction, MAX_SOCKETS_PER_HOST, OutboundError, parseRetryAfter, type Config, type Logger, type Outbound, type Pool } from '@tasksvc/runtime';
import { createBatcher } from './batch.ts';
import { claimDue, completeMany, disableEndpoint, markFailing, prune, release, type ClaimedDelivery, type Completion } from './db/deliveries.ts';
import { deliveryHeaders, failingTooLong, judge, maxAttempts, nextDelaySec, type AttemptResult } from './domain/delivery.ts';
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
}

async function recordOne(pool: Pool, c: Completion): Promise<boolean> {
  return (await completeMany(pool, [c]))[0]!;
}

/**
 * Decrypted signing secrets by stored form. AES-GCM decryption (key import, cipher set-up) cost
 * more than signing and sending together; the stored form changes whenever the secret or the
 * encryption key does, so an entry never goes stale. Bounded: cleared when full.
 */
const secrets = new Map<string, string>();
const MAX_CACHED_SECRETS = 10_000;

function readSecret(keyHex: string, stored: string): string {
  const cacheKey = `${keyHex}\n${stored}`;
  let secret = secrets.get(cacheKey);
  if (secret === undefined) {
    secret = decryptSecret(keyHex, stored);
    if (secrets.size >= MAX_CACHED_SECRETS) secrets.clear();
    secrets.set(cacheKey, secret);
  }
  return secret;
}

/** A claimed delivery is reclaimed by any worker when its lease runs out: twice the attempt time limit plus 5 s. */
export function leaseMs(config: Config): number {
  return config.WEBHOOK_TIMEOUT_SECONDS * 2_000 + 5_000;
}
const RETENTION_DAYS = 30;

/**
 * One attempt of one leased delivery: send, judge the answer, and record the outcome, the attempt,
 * the next attempt time and the endpoint's health in one transaction, only while the lease holds.
 */
export async function attemptDelivery(deps: WorkerDeps, d: ClaimedDelivery, onAnswered?: () => void): Promise<void> {
  const { config } = deps;
  const schedule = config.WEBHOOK_RETRY_SCHEDULE;
  const startedAt = new Date();
  const t0 = performance.now();
  let result: AttemptResult;
  let error: string | null = null;
  let secret: string | null = null;
  let secretProblem: string | null = null;
  if (d.secretEnc) {
    if (!config.TOTP_ENCRYPTION_KEY) secretProblem = 'the signing secret cannot be read: TOTP_ENCRYPTION_KEY is not set';
    else {
      try {
        secret = readSecret(config.TOTP_ENCRYPTION_KEY, d.secretEnc);
      } catch {
        secretProblem = 'the signing secret cannot be decrypted (was TOTP_ENCRYPTION_KEY changed?); set the secret again';
      }
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
  // the receiver is done with this attempt: its slot can go to the next one while the outcome is recorded
  onAnswered?.();
  const elapsedMs = performance.now() - t0;
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
    if (await (deps.record ?? ((c) => recordOne(deps.pool, c)))(completion)) webhookMetrics.finished(status);
    return;
  }
  let notified = false;
  let recorded = false;
  await inTransaction(deps.pool, async (c) => {
    if (!(await completeMany(c, [completion]))[0]) return;
    recorded = true;
    let disableReason: string | null = verdict.kind === 'gone' ? verdict.reason : null;
    const failing = await markFailing(c, d.endpointId);
    if (!disableReason && failing?.enabled && failingTooLong(failing.failingSince, new Date(), config.WEBHOOK_DISABLE_AFTER_HOURS)) {
      disableReason = `every delivery failed for ${config.WEBHOOK_DISABLE_AFTER_HOURS} hours`;
    }
    if (!disableReason) return;
    const disabled = await disableEndpoint(c, d.endpointId, disableReason);
    if (!disabled) return;
    await enqueueEvent(c, 'webhook', notificationRequested, {
      userId: disabled.userId,
      title: 'Webhook endpoint disabled',
      body: `Task events are no longer sent to ${disabled.url}: ${disableReason}. Fix the receiver, then enable the endpoint again in the integrations settings.`,
      url: '/settings/integrations',
      tag: 'webhook-disabled',
      dedupeKey: `webhook-disabled:${d.endpointId}:${(failing?.failingSince ?? startedAt).toISOString()}`,
    });
    notified = true;
  });
  if (recorded) webhookMetrics.finished(status);
  if (notified) deps.onNotify?.();
}

export interface DeliveryWorker {
  /** rows may be due now: for these receiving hosts (rows ingested) or for any (a manual retry) */
  kick(hosts?: readonly string[]): void;
  stop(): Promise<void>;
}

/**
 * The delivery loop: keeps up to `concurrency` claimed deliveries, claiming due rows from the
 * database in batches (so replicas share the work and a killed worker's rows are reclaimed after
 * the lease). At most `perHost` requests run against one receiving host at a time, whatever the
 * number of endpoints there (a self-hosted automation server may take every user's), so a slow or
 * hanging receiver holds a bounded share of the worker and of the keep-alive sockets to it; a slot
 * is free again as soon as the receiver has answered, while the outcome is still being recorded: a
 * claim takes at most that many rows per host and none for hosts already at the bound; the few
 * rows of a partly busy host that go over it wait here for a free slot.
 */
export function startDeliveryWorker(deps: WorkerDeps & { concurrency?: number; perHost?: number; pollMs?: number }): DeliveryWorker {
  // claims and completions grow with the window: at 512 a burst to 10 endpoints went out in a third of
  // the statements of 128, and 15-25 % faster, in tools/bench/webhooks.ts
  const concurrency = deps.concurrency ?? 512;
  // as many as the agent keeps sockets to one host (more would only wait there, their timeouts running),
  // and at most half the worker: a hanging receiver holds a bounded share, and one busy endpoint gets
  // enough requests in flight to be served at loopback speed (at 32, its deliveries went out in claims
  // and completions a third as large, and 12 % slower)
  const perHost = deps.perHost ?? Math.max(1, Math.min(MAX_SOCKETS_PER_HOST, Math.floor(concurrency / 2)));
  const lease = leaseMs(deps.config);
  const attemptMs = deps.config.WEBHOOK_TIMEOUT_SECONDS * 1000;
  // finished attempts are recorded together: one statement per batch instead of one per delivery
  const batcher = createBatcher((cs: Completion[]) => completeMany(deps.pool, cs), concurrency);
  const attemptDeps: WorkerDeps = { ...deps, record: (c) => batcher.add(c) };
  const inFlight = new Set<Promise<void>>();
  /** per receiving host (ClaimedDelivery.host): attempts running, and claimed rows waiting for one of its slots */
  const hosts = new Map<string, { running: number; waiting: { row: ClaimedDelivery; claimedAt: number }[] }>();
  let held = 0;
  let stopped = false;
  let pumping = false;
  let again = false;
  let lastPrune = 0;
  /** receiving hosts in the last claim that found rows (none yet: as many as there may be) */
  let lastHosts = Infinity;
  /** bumped whenever rows a claim could take may have come due: a kick or the poll */
  let dueGeneration = 0;
  /**
   * The hosts skipped by the last claim that took every row it could (fewer than it asked for, and
   * none of its hosts cut at the bound), in the generation it ran in. Until rows may have come due, a
   * claim skipping all of them again finds nothing, and such a claim is the dearest there is: it walks
   * the whole due backlog of the skipped hosts. With one busy receiver every finished attempt ran one
   * (a third of the claims, most of their time, in the bench), and at a trickle every claim was
   * followed by one. New rows for those hosts alone change nothing while they stay at their bound.
   */
  let drained: { skipped: Set<string>; generation: number } | undefined;

  /** Start the host's waiting rows while it has free slots; forget it once idle. */
  const drain = (hostKey: string): void => {
    const host = hosts.get(hostKey)!;
    while (host.running < perHost && host.waiting.length > 0) {
      const { row, claimedAt } = host.waiting.shift()!;
      // a row that waited so long its lease could run out mid-attempt goes back instead (no duplicate send)
      if (stopped || Date.now() + attemptMs > claimedAt + lease) {
        held--;
        void release(deps.pool, [row]).catch((err: unknown) => deps.log.warn({ err, deliveryId: row.id }, 'could not release a delivery; it is retried when its lease expires'));
        continue;
      }
      host.running++;
      let slotHeld = true;
      const freeSlot = () => {
        if (!slotHeld) return;
        slotHeld = false;
        host.running--;
        drain(hostKey);
      };
      // tracing on: each attempt is a span in the trace of the event it delivers
      const attempt = () => inSpan('deliver webhook', 'client', { 'webhook.delivery.id': row.id, 'webhook.attempt': row.attempts, 'webhook.event': row.event }, () => attemptDelivery(attemptDeps, row, freeSlot));
      const p: Promise<void> = continueTrace(row.traceparent, attempt)
        .catch((err: unknown) => deps.log.warn({ err, deliveryId: row.id }, 'delivery attempt failed to record; the lease expires and it is retried'))
        .finally(() => {
          inFlight.delete(p);
          held--;
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
        // refill in batches (one claim query per half-window of work, not one per delivery)
        while (!stopped && held <= concurrency / 2) {
          const saturated = [...hosts].filter(([, h]) => h.running + h.waiting.length >= perHost).map(([key]) => key);
          if (drained?.generation === dueGeneration && [...drained.skipped].every((h) => saturated.includes(h))) break;
          const generation = dueGeneration;
          const claimedAt = Date.now();
          // no more than the hosts of the last claim (and one more) can take: a claim locks a window twice
          // its limit, and with one busy host most of a full-sized window was locked for nothing
          const limit = Math.min(concurrency - held, perHost * (lastHosts + 1));
          const rows = await claimDue(deps.pool, limit, lease, { perHost, skipHosts: saturated });
          const perClaimedHost = new Map<string, number>();
          for (const row of rows) perClaimedHost.set(row.host, (perClaimedHost.get(row.host) ?? 0) + 1);
          if (rows.length < limit && [...perClaimedHost.values()].every((n) => n < perHost)) drained = { skipped: new Set(saturated), generation };
          if (rows.length === 0) break;
          const claimedHosts = [...perClaimedHost.keys()];
          lastHosts = claimedHosts.length;
          held += rows.length;
          for (const row of rows) {
            let host = hosts.get(row.host);
            if (!host) hosts.set(row.host, (host = { running: 0, waiting: [] }));
            host.waiting.push({ row, claimedAt });
          }
          for (const key of claimedHosts) drain(key);
        }
      } while (again && !stopped);
      if (Date.now() - lastPrune > 3_600_000) {
        lastPrune = Date.now();
        await prune(deps.pool, RETENTION_DAYS);
      }
    } catch (err) {
      deps.log.warn({ err: (err as Error).message }, 'delivery worker round failed');
    } finally {
      pumping = false;
    }
  };

  const comeDue = (hosts?: readonly string[]) => {
    if (!hosts || !hosts.every((h) => drained?.skipped.has(h))) dueGeneration++;
    void pump();
  };
  const timer = setInterval(comeDue, deps.pollMs ?? 250);
  void pump();
  return {
    kick: comeDue,
    async stop() {
      stopped = true;
      clearInterval(timer);
      // rows still waiting for a slot go back now rather than when their lease runs out
      const waiting = [...hosts.values()].flatMap((h) => h.waiting.splice(0).map((w) => w.row));
      held -= waiting.length;
      if (waiting.length) await release(deps.pool, waiting).catch((err: unknown) => deps.log.warn({ err }, 'could not release waiting deliveries; they are retried when their leases expire'));
      await Promise.allSettled([...inFlight]);
    },
  };
}
