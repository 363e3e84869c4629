import { describe, expect, it } from 'vitest';
import { RecentWindow } from './figures.ts';

describe('RecentWindow (the admin page’s recent request counts)', () => {
  const s = 1000;

  it('counts since the first snapshot while the window is not yet full', () => {
    const w = new RecentWindow<'n'>(300 * s);
    w.add(0, { n: 5 });
    w.add(10 * s, { n: 8 });
    expect(w.over(15 * s, { n: 12 })).toEqual({ seconds: 15, counts: { n: 7 } });
  });

  it('once full, compares with the newest snapshot at or before the window start', () => {
    const w = new RecentWindow<'n'>(300 * s);
    for (let t = 0; t <= 400; t += 10) w.add(t * s, { n: t }); // one event a second
    // the newest snapshot: 400 s; the window start 100 s: based on the snapshot taken then
    expect(w.over(405 * s, { n: 405 })).toEqual({ seconds: 305, counts: { n: 305 } });
  });

  it('without a snapshot, nothing is recent; a counter that went down counts from zero', () => {
    expect(new RecentWindow<'n'>(300 * s).over(5 * s, { n: 9 })).toEqual({ seconds: 0, counts: { n: 0 } });
    const w = new RecentWindow<'n'>(300 * s);
    w.add(0, { n: 50 });
    expect(w.over(20 * s, { n: 4 }).counts).toEqual({ n: 4 });
  });
});
