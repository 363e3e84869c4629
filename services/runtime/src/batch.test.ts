import { describe, expect, it } from 'vitest';
import { createBatcher, takeFairly } from './batch.ts';

/** A flush that holds its first call until `release()`; `firstStarted` resolves when that call began. */
function heldFirstFlush<T, R>(map: (items: T[]) => R[]) {
  const flushes: T[][] = [];
  let release: () => void = () => undefined;
  let started: () => void = () => undefined;
  const firstStarted = new Promise<void>((r) => (started = r));
  const flush = async (items: T[]) => {
    flushes.push(items);
    if (flushes.length === 1) {
      started();
      await new Promise<void>((r) => (release = r));
    }
    return map(items);
  };
  return { flushes, flush, firstStarted, release: () => release() };
}

describe('createBatcher', () => {
  it('sends the items added in one synchronous run together, and coalesces the items that arrive while a flush runs', async () => {
    const held = heldFirstFlush((items: number[]) => items.map((i) => i * 10));
    const b = createBatcher(held.flush, 3);
    // the events of one message are handed over together: one statement, not the first alone
    const first = [b.add(1), b.add(2)];
    await held.firstStarted;
    const rest = [b.add(3), b.add(4), b.add(5), b.add(6)];
    held.release();
    expect(await Promise.all([...first, ...rest])).toEqual([10, 20, 30, 40, 50, 60]);
    // the four that waited went in statements of at most three
    expect(held.flushes).toEqual([[1, 2], [3, 4, 5], [6]]);
  });

  it('retries each item of a failed batch on its own, so only the bad one fails', async () => {
    const held = heldFirstFlush((items: string[]) => {
      if (items.includes('bad')) throw new Error('bad item');
      return items.map((i) => i.toUpperCase());
    });
    const b = createBatcher(held.flush, 10);
    const first = b.add('a');
    await held.firstStarted;
    const results = Promise.allSettled([b.add('b'), b.add('bad'), b.add('c')]);
    held.release();
    expect(await first).toBe('A');
    const settled = await results;
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(settled[0]).toMatchObject({ value: 'B' });
    expect(settled[2]).toMatchObject({ value: 'C' });
    expect(held.flushes).toEqual([['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
  });

  it('fair: takes the waiting items round-robin by key and stops a statement at its weight', async () => {
    const held = heldFirstFlush((items: string[]) => items);
    const b = createBatcher(held.flush, 10, { key: (i) => i[0]!, weight: (i) => (i[0] === 'a' ? 10 : 1), maxWeight: 25 });
    const first = b.add('a0');
    await held.firstStarted;
    // one user's burst, then another's event arriving behind it
    const rest = ['a1', 'a2', 'a3', 'a4', 'b1', 'a5', 'b2'].map((i) => b.add(i));
    held.release();
    await Promise.all([first, ...rest]);
    expect(held.flushes).toEqual([['a0'], ['a1', 'b1', 'a2', 'b2', 'a3'], ['a4', 'a5']]);
  });
});

describe('takeFairly', () => {
  it('takes at least one item, even heavier than the limit, and leaves the rest in order', () => {
    const fair = { key: (i: number) => String(i % 2), weight: () => 100, maxWeight: 10 };
    expect(takeFairly([1, 2, 3], 5, fair)).toEqual({ batch: [1], rest: [2, 3] });
    expect(takeFairly([1, 3, 2, 4], 3, { ...fair, weight: () => 1 })).toEqual({ batch: [1, 2, 3], rest: [4] });
  });
});
