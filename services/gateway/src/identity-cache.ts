import { IDENTITY_CHANGED_SUBJECT, identityChanged, type Identity } from '@tasksvc/proto';
import type { Bus } from '@tasksvc/runtime';

/**
 * How long an API key's identity is reused without asking the auth service. Changes arrive by
 * broadcast and a lost connection empties the cache, so this only bounds a broadcast lost otherwise.
 */
export const IDENTITY_TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  user: Identity;
  until: number;
}

export interface IdentityCache {
  get(key: string): Identity | undefined;
  /** taken before asking the auth service, and handed to `set` */
  stamp(): number;
  /** Remember an answer, unless anything was invalidated since `stamp` (the answer may predate it). */
  set(key: string, user: Identity, stamp: number): void;
}

const caches = new WeakMap<Bus, IdentityCache>();

/**
 * API-key identities for up to a minute, keyed by a hash of the Authorization header, so a burst of
 * API requests costs the auth service (and PostgreSQL) one lookup. The auth service broadcasts
 * every account change (a revoked key, a new second factor) and every replica drops that user's
 * entries at once. Broadcasts are not stored for an absent subscriber, so when the connection to NATS
 * drops or comes back the whole cache goes (the next request of each key asks again).
 */
export function identityCache(bus: Bus): IdentityCache {
  let cache = caches.get(bus);
  if (cache) return cache;
  const entries = new Map<string, Entry>();
  // counts invalidations: a lookup that was in flight across one must not store its older answer
  let invalidations = 0;
  bus.onBroadcast(
    IDENTITY_CHANGED_SUBJECT,
    (raw) => {
      const msg = identityChanged.safeParse(raw);
      if (!msg.success) return;
      invalidations++;
      for (const [key, e] of entries) if (e.user.id === msg.data.userId) entries.delete(key);
    },
    () => {
      invalidations++;
      entries.clear();
    },
  );
  cache = {
    get(key) {
      const e = entries.get(key);
      if (!e) return undefined;
      if (e.until > Date.now()) return e.user;
      entries.delete(key);
      return undefined;
    },
    stamp: () => invalidations,
    set(key, user, stamp) {
      if (stamp !== invalidations) return;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(key, { user, until: Date.now() + IDENTITY_TTL_MS });
    },
  };
  caches.set(bus, cache);
  return cache;
}
