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
  /** from then on its next use asks again in the background (once) */
  refreshAt: number;
}

export interface Cached {
  user: Identity;
  /** true once the entry is old enough to be asked for again: the caller does so without waiting */
  refresh: boolean;
}

export interface IdentityCache {
  get(key: string): Cached | undefined;
  /** taken before asking the auth service, and handed to `set` */
  stamp(): number;
  /** Remember an answer, unless anything was invalidated since `stamp` (the answer may predate it). */
  set(key: string, user: Identity, stamp: number): void;
  /** The key no longer identifies anyone (a refresh was answered with no one). */
  forget(key: string): void;
}

const caches = new WeakMap<Bus, IdentityCache>();

/**
 * API-key identities for up to a minute (never past the key's own expiry), keyed by a hash of the Authorization header, so a burst of
 * API requests costs the auth service (and PostgreSQL) one lookup. The auth service broadcasts
 * every account change (a revoked key, a new second factor) and every replica drops that user's
 * entries at once. Broadcasts are not stored for an absent subscriber, so when the connection to NATS
 * drops or comes back the whole cache goes (the next request of each key asks again).
 *
 * A key in steady use is asked for again in the background 30–45 s after its answer (the caller
 * answers from the entry meanwhile), so its requests never wait for an expired entry. Without that,
 * every key first seen in the same second expires in the same second a minute later, and each of
 * their next requests waits for the auth service at once. The spread keeps those refreshes apart.
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
      const now = Date.now();
      if (e.until <= now) {
        entries.delete(key);
        return undefined;
      }
      const refresh = e.refreshAt <= now;
      if (refresh) e.refreshAt = Infinity; // one refresh in flight; its answer makes a new entry
      return { user: e.user, refresh };
    },
    stamp: () => invalidations,
    set(key, user, stamp) {
      if (stamp !== invalidations) return;
      // re-inserted last, so the oldest entries stay first for the size cap
      if (!entries.delete(key) && entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      const now = Date.now();
      // an expiring key is used up to its expiry, never past it (the auth service refuses it from then on)
      const expires = user.expiresAt ? Date.parse(user.expiresAt) : Infinity;
      const until = Math.min(now + IDENTITY_TTL_MS, expires);
      entries.set(key, { user, until, refreshAt: Math.min(now + IDENTITY_TTL_MS * (0.5 + Math.random() / 4), until) });
    },
    forget: (key) => void entries.delete(key),
  };
  caches.set(bus, cache);
  return cache;
}
