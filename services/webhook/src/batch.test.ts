import { describe, expect, it } from 'vitest';
import { createBatcher } from './batch.ts';

describe('createBatcher', () => {
  it('sends an item at once when idle, and coalesces the items that arrive while a flush runs', async () => {
    const flushes: number[][] = [];
    let release: () => void = () => undefined;
    const b = createBatcher(async (items: number[]) => {
      flushes.push(items);
      if (flushes.length === 1) await new Promise<void>((r) => (release = r));
      return items.map((i) => i * 10);
    }, 3);
    const first = b.add(1);
    const rest = [b.add(2), b.add(3), b.add(4), b.add(5)];
    release();
    expect(await Promise.all([first, ...rest])).toEqual([10, 20, 30, 40, 50]);
    // the first went alone; the four that waited went in statements of at most three
    expect(flushes).toEqual([[1], [2, 3, 4], [5]]);
  });

  it('retries each item of a failed batch on its own, so only the bad one fails', async () => {
    const flushes: string[][] = [];
    let release: () => void = () => undefined;
    const b = createBatcher(async (items: string[]) => {
      flushes.push(items);
      if (flushes.length === 1) await new Promise<void>((r) => (release = r));
      if (items.includes('bad')) throw new Error('bad item');
      return items.map((i) => i.toUpperCase());
    }, 10);
    const first = b.add('a');
    const results = Promise.allSettled([b.add('b'), b.add('bad'), b.add('c')]);
    release();
    expect(await first).toBe('A');
    const settled = await results;
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(settled[0]).toMatchObject({ value: 'B' });
    expect(settled[2]).toMatchObject({ value: 'C' });
    expect(flushes).toEqual([['a'], ['b', 'bad', 'c'], ['b'], ['bad'], ['c']]);
  });
});
