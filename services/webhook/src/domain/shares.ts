/**
 * The delivery worker's fair shares (docs/webhooks.md, Fair scheduling), pure: how many claimed
 * rows each user holds, how many requests each receiving host has running or waiting, and which
 * hosts have proven quick. A claim may give a user at most its room (its share minus what it holds)
 * and a host at most its budget's room. A host has the full `perHost` budget only while it answers
 * in time (within `slowAfterMs`); a new host, or one that timed out or answered late, has the small
 * `unprovenPerHost` until an attempt to it is answered in time (a slow start, as TCP's): receivers
 * that hang hold a few slots each, never the worker, and a quick one is at full speed after its
 * first answer. A user that holds rows is offered more only once `userBatch` of its share is free,
 * so a busy user's rows are claimed in batches.
 */
export interface ShareLimits {
  /** rows one user may hold (running or waiting for its host) */
  perUser: number;
  /** a user holding rows gets more only once this much of its share is free (1: at once) */
  userBatch: number;
  /** requests in flight to a receiving host that answers in time */
  perHost: number;
  /** the same for a host that has not (yet, or lately): new, timed out, or answered late */
  unprovenPerHost: number;
  /** an answer this late (or none: a time-out) makes its host unproven */
  slowAfterMs: number;
  /** a host not answered in time for this long is unproven again */
  provenForMs: number;
}

export interface Held {
  userId: string;
  host: string;
}

export interface Rooms {
  /** users the worker holds rows of, with their room (0: none now) */
  users: Map<string, number>;
  /** hosts the worker holds rows of or that have proven quick, with their room; any other host has `unprovenPerHost` */
  hosts: Map<string, number>;
  /** `user:<id>` and `host:<host>` of those with no room */
  full: Set<string>;
}

export interface Shares {
  /** requests the host may have in flight now */
  budget(host: string, now: number): number;
  /** a claimed row is held (running or waiting) */
  take(row: Held): void;
  /** a held row is finished or given back */
  give(row: Held): void;
  /** an attempt to `host` was answered after `ms`, or timed out */
  answered(host: string, ms: number, timedOut: boolean, now: number): void;
  /** the rooms for a claim */
  rooms(now: number): Rooms;
}

export function createShares(limits: ShareLimits): Shares {
  const heldByUser = new Map<string, number>();
  const heldByHost = new Map<string, number>();
  /** host → when it last answered in time (since it last did not) */
  const proven = new Map<string, number>();

  const isProven = (host: string, now: number): boolean => {
    const at = proven.get(host);
    if (at === undefined) return false;
    if (now - at < limits.provenForMs) return true;
    proven.delete(host);
    return false;
  };
  const budget = (host: string, now: number) => (isProven(host, now) ? limits.perHost : limits.unprovenPerHost);
  const bump = (m: Map<string, number>, key: string, by: number) => {
    const n = (m.get(key) ?? 0) + by;
    if (n > 0) m.set(key, n);
    else m.delete(key);
  };

  return {
    budget,
    take(row) {
      bump(heldByUser, row.userId, 1);
      bump(heldByHost, row.host, 1);
    },
    give(row) {
      bump(heldByUser, row.userId, -1);
      bump(heldByHost, row.host, -1);
    },
    answered(host, ms, timedOut, now) {
      if (timedOut || ms >= limits.slowAfterMs) proven.delete(host);
      else proven.set(host, now);
    },
    rooms(now) {
      const users = new Map<string, number>();
      const hosts = new Map<string, number>();
      const full = new Set<string>();
      for (const [user, held] of heldByUser) {
        const free = limits.perUser - held;
        const room = free >= limits.userBatch ? free : 0;
        users.set(user, room);
        if (room === 0) full.add(`user:${user}`);
      }
      for (const host of new Set([...heldByHost.keys(), ...proven.keys()])) {
        const room = Math.max(0, budget(host, now) - (heldByHost.get(host) ?? 0));
        // a host no longer proven and holding nothing is like any other: no entry
        if (!heldByHost.has(host) && !proven.has(host)) continue;
        hosts.set(host, room);
        if (room === 0) full.add(`host:${host}`);
      }
      return { users, hosts, full };
    },
  };
}
