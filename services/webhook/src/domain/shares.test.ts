import { describe, expect, it } from 'vitest';
import { createShares } from './shares.ts';

const limits = { perUser: 4, userBatch: 1, perHost: 3, unprovenPerHost: 1, slowAfterMs: 1_000, provenForMs: 60_000 };

describe('the delivery worker’s fair shares', () => {
  it('a fresh user or host is not listed (it has its whole share); held rows shrink their rooms, down to full', () => {
    const s = createShares(limits);
    expect(s.rooms(0)).toEqual({ users: new Map(), hosts: new Map(), full: new Set() });
    s.answered('h1', 10, false, 0);
    s.answered('h2', 10, false, 0);
    for (let i = 0; i < 3; i++) s.take({ userId: 'a', host: 'h1' });
    s.take({ userId: 'a', host: 'h2' });
    s.take({ userId: 'b', host: 'h2' });
    s.take({ userId: 'b', host: 'h3' });
    expect(s.rooms(0)).toEqual({
      users: new Map([
        ['a', 0],
        ['b', 2],
      ]),
      hosts: new Map([
        ['h1', 0],
        ['h2', 1],
        ['h3', 0],
      ]),
      full: new Set(['user:a', 'host:h1', 'host:h3']),
    });
    s.give({ userId: 'a', host: 'h1' });
    expect(s.rooms(0).full).toEqual(new Set(['host:h3']));
    for (let i = 0; i < 2; i++) s.give({ userId: 'a', host: 'h1' });
    s.give({ userId: 'a', host: 'h2' });
    s.give({ userId: 'b', host: 'h2' });
    s.give({ userId: 'b', host: 'h3' });
    // quick hosts stay listed with their full budget (any other gets the unproven one)
    expect(s.rooms(0)).toEqual({
      users: new Map(),
      hosts: new Map([
        ['h1', 3],
        ['h2', 3],
      ]),
      full: new Set(),
    });
  });

  it('a user holding rows is offered more only once a batch of its share is free', () => {
    const s = createShares({ ...limits, perUser: 8, userBatch: 3 });
    for (let i = 0; i < 8; i++) s.take({ userId: 'a', host: `h${i}` });
    s.give({ userId: 'a', host: 'h0' });
    s.give({ userId: 'a', host: 'h1' });
    expect(s.rooms(0).users.get('a')).toBe(0);
    expect(s.rooms(0).full.has('user:a')).toBe(true);
    s.give({ userId: 'a', host: 'h2' });
    expect(s.rooms(0).users.get('a')).toBe(3);
    expect(s.rooms(0).full.has('user:a')).toBe(false);
  });

  it('a host has the full budget only after answering in time, until it times out, answers late or is not heard from', () => {
    const s = createShares(limits);
    expect(s.budget('h', 0)).toBe(1);
    s.answered('h', 999, false, 0);
    expect(s.budget('h', 0)).toBe(3);
    expect(s.rooms(10).hosts).toEqual(new Map([['h', 3]]));
    s.answered('h', 1_000, false, 0);
    expect(s.budget('h', 0)).toBe(1);
    expect(s.rooms(10).hosts).toEqual(new Map());
    s.take({ userId: 'a', host: 'h' });
    expect(s.rooms(10).full).toEqual(new Set(['host:h']));
    s.answered('h', 20, false, 20);
    expect(s.budget('h', 20)).toBe(3);
    expect(s.budget('h', 20 + 59_999)).toBe(3);
    expect(s.budget('h', 20 + 60_000)).toBe(1);
    s.answered('h', 20, false, 100_000);
    s.answered('h', 15_000, true, 100_010);
    expect(s.budget('h', 100_010)).toBe(1);
    s.give({ userId: 'a', host: 'h' });
    expect(s.rooms(100_010)).toEqual({ users: new Map(), hosts: new Map(), full: new Set() });
  });
});
