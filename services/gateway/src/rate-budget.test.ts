import { describe, expect, it } from 'vitest';
import { granted, leaseSize, RateBudget } from './rate-budget.ts';

describe('a replica’s leases of a user’s write budget', () => {
  it('leases a sixth of a fresh limit, shrinking to one call near its end, at least what the call needs', () => {
    expect(leaseSize(60, 1, undefined)).toBe(10);
    expect(leaseSize(60, 1, 40)).toBe(5);
    expect(leaseSize(60, 1, 58)).toBe(1);
    expect(leaseSize(60, 1, 70)).toBe(1);
    expect(leaseSize(3, 1, undefined)).toBe(1);
    expect(leaseSize(200, 150, undefined)).toBe(150);
  });

  it('grants what the limit had left before the lease, never more', () => {
    expect(granted(60, 10, 10)).toBe(10);
    expect(granted(60, 10, 65)).toBe(5);
    expect(granted(60, 10, 75)).toBe(0);
    expect(granted(60, 1, 61)).toBe(0);
  });

  it('spends a lease in its window only, and not past what it holds', () => {
    const b = new RateBudget();
    const end = 60_000;
    expect(b.spend('u', 1, 0)).toBe(false);
    expect(b.add('u', 3, 3, end, 1, 0)).toBe(true);
    expect(b.spend('u', 2, 1)).toBe(true);
    expect(b.spend('u', 1, 2)).toBe(false);
    expect(b.knownHits('u', 2)).toBe(3);
    // a new window starts empty: an old lease is not spent in it
    expect(b.add('u', 1, 1, end, 1, 3)).toBe(true);
    expect(b.add('u', 2, 2, 2 * end, 1, end)).toBe(true);
    expect(b.spend('u', 1, end + 1)).toBe(true);
    expect(b.spend('u', 1, 2 * end)).toBe(false);
    expect(b.knownHits('u', 2 * end)).toBeUndefined();
    // a refusal grants nothing
    expect(b.add('v', 0, 61, end, 1, 0)).toBe(false);
  });
});
