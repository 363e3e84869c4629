import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deliveryHeaders, failingTooLong, filterMatches, judge, maxAttempts, nextDelaySec } from './delivery.ts';

describe('webhook delivery rules', () => {
  it('an empty filter matches every event, otherwise only the listed ones', () => {
    expect(filterMatches([], 'task.deleted')).toBe(true);
    expect(filterMatches(['task.created', 'task.completed'], 'task.completed')).toBe(true);
    expect(filterMatches(['task.created'], 'task.updated')).toBe(false);
  });

  it.each([
    [{ status: 200 }, 'delivered'],
    [{ status: 204 }, 'delivered'],
    [{ status: 299 }, 'delivered'],
    [{ status: 301 }, 'retry'],
    [{ status: 308 }, 'retry'],
    [{ status: 408 }, 'retry'],
    [{ status: 429 }, 'retry'],
    [{ status: 500 }, 'retry'],
    [{ status: 502 }, 'retry'],
    [{ status: 410 }, 'gone'],
    [{ status: 400 }, 'failed'],
    [{ status: 401 }, 'failed'],
    [{ status: 404 }, 'failed'],
    [{ errorKind: 'network' }, 'retry'],
    [{ errorKind: 'timeout' }, 'retry'],
    [{ errorKind: 'dns' }, 'retry'],
    [{ errorKind: 'blocked' }, 'failed'],
  ])('judges %o as %s', (result, kind) => {
    expect(judge(result).kind).toBe(kind);
  });

  it('429 and 503 carry Retry-After into the verdict', () => {
    expect(judge({ status: 429, retryAfterSec: 120 })).toEqual({ kind: 'retry', reason: 'HTTP 429', minDelaySec: 120 });
    expect(judge({ status: 503, retryAfterSec: 7 })).toMatchObject({ minDelaySec: 7 });
  });

  it('follows the schedule exactly without jitter, stretched by at most 10% with it, and ends', () => {
    const schedule = [5, 300, 1800];
    expect(maxAttempts(schedule)).toBe(4);
    expect(nextDelaySec(schedule, 1, 0)).toBe(5);
    expect(nextDelaySec(schedule, 2, 0)).toBe(300);
    expect(nextDelaySec(schedule, 3, 0)).toBe(1800);
    expect(nextDelaySec(schedule, 4, 0)).toBeNull();
    expect(nextDelaySec(schedule, 2, 0.999)).toBeCloseTo(329.97, 1);
    expect(nextDelaySec(schedule, 2, 0.5)).toBe(315);
  });

  it('Retry-After raises the delay but is capped at a day', () => {
    expect(nextDelaySec([5], 1, 0, 60)).toBe(60);
    expect(nextDelaySec([500], 1, 0, 60)).toBe(500);
    expect(nextDelaySec([5], 1, 0, 10 * 86_400)).toBe(86_400);
  });

  it('disables only after failing for the whole window', () => {
    const now = new Date('2026-01-06T00:00:00Z');
    expect(failingTooLong(null, now, 120)).toBe(false);
    expect(failingTooLong(new Date('2026-01-01T00:00:01Z'), now, 120)).toBe(false);
    expect(failingTooLong(new Date('2026-01-01T00:00:00Z'), now, 120)).toBe(true);
  });

  it('signs exactly the body bytes; event and delivery id headers always present', () => {
    const body = '{"event":"task.created","x":"ü"}';
    const h = deliveryHeaders({ deliveryId: 'd1', event: 'task.created', body, secret: 's3cret-key', attempt: 2 });
    expect(h['X-Service-Signature']).toBe(`sha256=${createHmac('sha256', 's3cret-key').update(Buffer.from(body, 'utf8')).digest('hex')}`);
    expect(h['X-Service-Signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(h['X-Service-Event']).toBe('task.created');
    expect(h['X-Service-Delivery']).toBe('d1');
    expect(deliveryHeaders({ deliveryId: 'd1', event: 'task.created', body, secret: null, attempt: 1 })['X-Service-Signature']).toBeUndefined();
  });

  it('adds Standard Webhooks headers: id, timestamp, v1 signature over id.timestamp.body', () => {
    const body = '{"event":"task.deleted"}';
    const now = new Date('2026-11-22T06:00:00Z');
    const h = deliveryHeaders({ deliveryId: 'msg_1', event: 'task.deleted', body, secret: 'k3y-material', attempt: 1, now });
    expect(h['webhook-id']).toBe('msg_1');
    expect(h['webhook-timestamp']).toBe(String(now.getTime() / 1000));
    // what a Standard Webhooks receiver computes with the secret whsec_<base64("k3y-material")>
    const key = Buffer.from(Buffer.from('k3y-material').toString('base64'), 'base64');
    expect(h['webhook-signature']).toBe(`v1,${createHmac('sha256', key).update(`msg_1.${h['webhook-timestamp']}.${body}`).digest('base64')}`);
    expect(deliveryHeaders({ deliveryId: 'x', event: 'task.deleted', body, secret: null, attempt: 1 })['webhook-signature']).toBeUndefined();
  });
});
