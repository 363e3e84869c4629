import { IDENTITY_CHANGED_SUBJECT, identityChanged, type Identity } from '@tasksvc/proto';
import type { Bus } from '@tasksvc/runtime';

/** How long an API key's identity is reused without asking the auth service (bounds staleness if a revocation broadcast is missed). */
export const IDENTITY_TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  user: Identity;
  until: number;
}

export interface IdentityCache {
  get(key: string): Identity | undefined;
  set(key: string, user: Identity): void;
}

const caches = new WeakMap<Bus, IdentityCache>();

/**
 * API-key identities for a few seconds, keyed by a hash of the Authorization header, so a burst of
 * API requests costs the auth service (and PostgreSQL) one lookup. The auth service broadcasts
 * every account change (a revoked key, a new second factor) and every replica drops that user's
 * entries at once; the TTL only covers a broadcast lost while disconnected.
 */
export function identityCache(bus: Bus): IdentityCache {
  let cache = caches.get(bus);
  if (cache) return cache;
  const entries = new Map<string, Entry>();
  bus.onBroadcast(IDENTITY_CHANGED_SUBJECT, (raw) => {
    const msg = identityChanged.safeParse(raw);
    if (!msg.success) return;
    for (const [key, e] of entries) if (e.user.id === msg.data.userId) entries.delete(key);
  });
  cache = {
    get(key) {
      const e = entries.get(key);
      if (!e) return undefined;
      if (e.until > Date.now()) return e.user;
      entries.delete(key);
      return undefined;
    },
    set(key, user) {
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(key, { user, until: Date.now() + IDENTITY_TTL_MS });
    },
  };
  caches.set(bus, cache);
  return cache;
}
