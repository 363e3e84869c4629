import { randomUUID } from 'node:crypto';
import { IDENTITY_CHANGED_SUBJECT, type Identity } from '@tasksvc/proto';
import { createMemoryBus, createNatsBus } from '@tasksvc/runtime';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { quietLogger, startNats, until, type LocalNats } from '../../../tools/testenv/index.ts';
import { IDENTITY_TTL_MS, identityCache } from './identity-cache.ts';

const log = quietLogger();
const someone = (): Identity => ({ id: randomUUID(), email: 'a@example.com', method: 'api_key', readOnly: false, secondFactorOk: true, isAdmin: false });

describe('the gateway identity cache', () => {
  it('keeps an answer, drops the user on a broadcast, and never stores an answer asked for before one', async () => {
    const bus = createMemoryBus(log);
    const cache = identityCache(bus);
    const alice = someone();
    const bob = someone();
    cache.set('a', alice, cache.stamp());
    cache.set('b', bob, cache.stamp());
    expect(cache.get('a')?.user).toEqual(alice);

    // a lookup of alice's key is in flight when her key is revoked: its answer may predate the revocation
    const askedAt = cache.stamp();
    bus.broadcast(IDENTITY_CHANGED_SUBJECT, { userId: alice.id });
    await until(() => cache.get('a') === undefined, "alice's entry dropped");
    cache.set('a', alice, askedAt);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')?.user).toEqual(bob);
    // asked after the broadcast: kept
    cache.set('a', alice, cache.stamp());
    expect(cache.get('a')?.user).toEqual(alice);
    await bus.close();
  });

  describe('in time', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('asks its user to refresh an entry once, from half to three quarters of its life, and drops it at the end', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const bus = createMemoryBus(log);
      const cache = identityCache(bus);
      const alice = someone();
      const start = Date.now();
      const at = (ms: number) => {
        vi.setSystemTime(start + ms);
        return cache.get('a');
      };
      cache.set('a', alice, cache.stamp());
      expect(at(IDENTITY_TTL_MS / 2 - 1)).toEqual({ user: alice, refresh: false });
      expect(at((IDENTITY_TTL_MS * 3) / 4)).toEqual({ user: alice, refresh: true });
      // one refresh at a time: the next uses answer from the entry without asking again
      expect(at((IDENTITY_TTL_MS * 3) / 4 + 1)).toEqual({ user: alice, refresh: false });
      expect(at(IDENTITY_TTL_MS - 1)).toEqual({ user: alice, refresh: false });
      expect(at(IDENTITY_TTL_MS)).toBeUndefined();

      // a refresh's answer starts a new life
      vi.setSystemTime(start);
      cache.set('a', alice, cache.stamp());
      expect(at((IDENTITY_TTL_MS * 3) / 4)?.refresh).toBe(true);
      cache.set('a', alice, cache.stamp());
      expect(at(IDENTITY_TTL_MS + 1)).toEqual({ user: alice, refresh: false });
      cache.forget('a');
      expect(at(IDENTITY_TTL_MS + 1)).toBeUndefined();
      await bus.close();
    });

    it("never answers for an expiring key past its expiry (#56.3)", () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const bus = createMemoryBus(log);
      const cache = identityCache(bus);
      const start = Date.now();
      const alice = { ...someone(), expiresAt: new Date(start + 5_000).toISOString() };
      cache.set('a', alice, cache.stamp());
      vi.setSystemTime(start + 4_999);
      expect(cache.get('a')?.user).toEqual(alice);
      vi.setSystemTime(start + 5_000);
      expect(cache.get('a')).toBeUndefined();
      // an answer for a key that already expired (clocks a little apart) is not kept at all
      cache.set('a', alice, cache.stamp());
      expect(cache.get('a')).toBeUndefined();
      void bus.close();
    });
  });

  describe('over NATS', () => {
    let nats: LocalNats;
    beforeAll(async () => {
      nats = await startNats();
    });
    afterAll(async () => {
      await nats?.stop();
    });

    it('empties itself when the connection drops, since broadcasts sent meanwhile are lost', async () => {
      const bus = await createNatsBus({ servers: nats.url, name: 'gateway-cache-test', log });
      try {
        const cache = identityCache(bus);
        const alice = someone();
        cache.set('a', alice, cache.stamp());
        expect(cache.get('a')?.user).toEqual(alice);
        const before = cache.stamp();
        await nats.restart();
        await until(() => cache.get('a') === undefined, 'the cache emptied by the disconnect');
        // emptied again on the reconnect; then answers are kept again
        await until(() => cache.stamp() >= before + 2, 'the reconnect seen');
        await bus.flush();
        cache.set('a', alice, cache.stamp());
        expect(cache.get('a')?.user).toEqual(alice);
      } finally {
        await bus.close();
      }
    });
  });
});
