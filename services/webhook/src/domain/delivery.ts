import { createHmac } from 'node:crypto';
import { WEBHOOK_HEADERS } from '@tasksvc/proto';
import { signBody } from '@tasksvc/runtime';

/**
 * Pure delivery rules of task-event webhooks: which endpoints an event goes to, the headers a
 * delivery carries, how an answer is judged, and when the next attempt happens.
 */

/** An empty filter means every task event. */
export function filterMatches(filter: readonly string[], event: string): boolean {
  return filter.length === 0 || filter.includes(event);
}

export interface AttemptResult {
  /** HTTP status when the receiver answered */
  status?: number;
  /** OutboundError kind when it did not (network, timeout, dns, blocked, invalid_url) */
  errorKind?: string;
  /** seconds from a Retry-After header */
  retryAfterSec?: number | null;
}

export type Verdict =
  | { kind: 'delivered' }
  | { kind: 'retry'; reason: string; minDelaySec: number | null }
  | { kind: 'failed'; reason: string }
  | { kind: 'gone'; reason: string };

/**
 * Only 2xx is success. Redirects (3xx, never followed), 408, 429, 5xx, network errors, time-outs and
 * DNS failures are retried (429 and 503 honour Retry-After). 410 Gone disables the endpoint. Any
 * other 4xx, and a URL the outbound guard refuses, fail at once: retrying would not change them.
 */
export function judge(r: AttemptResult): Verdict {
  if (r.status === undefined) {
    if (r.errorKind === 'blocked' || r.errorKind === 'invalid_url') return { kind: 'failed', reason: 'the URL is not allowed' };
    return { kind: 'retry', reason: r.errorKind ?? 'network', minDelaySec: null };
  }
  const s = r.status;
  if (s >= 200 && s < 300) return { kind: 'delivered' };
  if (s === 410) return { kind: 'gone', reason: 'the receiver answered 410 Gone' };
  if (s >= 300 && s < 400) return { kind: 'retry', reason: `redirect ${s} (redirects are not followed)`, minDelaySec: null };
  if (s === 429 || s === 503) return { kind: 'retry', reason: `HTTP ${s}`, minDelaySec: r.retryAfterSec ?? null };
  if (s === 408 || s >= 500) return { kind: 'retry', reason: `HTTP ${s}`, minDelaySec: null };
  return { kind: 'failed', reason: `HTTP ${s}` };
}

/** Longest wait a Retry-After header can impose. */
export const MAX_RETRY_AFTER_SEC = 24 * 3600;
/** Jitter: each scheduled delay is stretched by up to this fraction, so retries of many deliveries spread out. */
export const JITTER = 0.1;

/**
 * Seconds until the next attempt after `attemptsDone` attempts, or null when the schedule is
 * exhausted. `schedule[i]` is the delay after attempt i+1; `random` is in [0, 1).
 */
export function nextDelaySec(schedule: readonly number[], attemptsDone: number, random: number, minDelaySec: number | null = null): number | null {
  if (attemptsDone < 1 || attemptsDone > schedule.length) return null;
  const base = schedule[attemptsDone - 1]! * (1 + JITTER * random);
  const floor = minDelaySec === null ? 0 : Math.min(minDelaySec, MAX_RETRY_AFTER_SEC);
  return Math.max(base, floor);
}

/** Total attempts a delivery gets: the first one plus one per schedule entry. */
export function maxAttempts(schedule: readonly number[]): number {
  return schedule.length + 1;
}

/** An endpoint failing without any success for the whole window is disabled. */
export function failingTooLong(failingSince: Date | null, now: Date, windowHours: number): boolean {
  return failingSince !== null && now.getTime() - failingSince.getTime() >= windowHours * 3_600_000;
}

/**
 * The headers of one attempt. The delivery id is stable across retries (receivers dedupe on it).
 * Alongside the spec's X-Service-Signature, Standard Webhooks headers are sent: `webhook-id` (the
 * delivery id), `webhook-timestamp` (Unix seconds of this attempt) and, with a secret,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the secret's
 * UTF-8 bytes (a Standard Webhooks library verifies it with the secret `whsec_<base64 of the secret>`).
 */
export function deliveryHeaders(opts: { deliveryId: string; event: string; body: string; secret: string | null; attempt: number; now?: Date }): Record<string, string> {
  const timestamp = String(Math.floor((opts.now ?? new Date()).getTime() / 1000));
  const h: Record<string, string> = {
    'content-type': 'application/json',
    [WEBHOOK_HEADERS.event]: opts.event,
    [WEBHOOK_HEADERS.delivery]: opts.deliveryId,
    'X-Service-Attempt': String(opts.attempt),
    'webhook-id': opts.deliveryId,
    'webhook-timestamp': timestamp,
  };
  if (opts.secret) {
    h[WEBHOOK_HEADERS.signature] = signBody(opts.secret, opts.body);
    h['webhook-signature'] = `v1,${createHmac('sha256', opts.secret).update(`${opts.deliveryId}.${timestamp}.${opts.body}`).digest('base64')}`;
  }
  return h;
}
