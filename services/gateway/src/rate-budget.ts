/**
 * A replica's share of each user's write budget (issue 61: an upsert and a commit per create nearly
 * doubled its cost). The count stays in PostgreSQL, shared by every replica, but a replica takes a
 * few calls' worth of a user's budget at once (a lease) and spends it in memory; the next statement
 * comes when the lease is spent. Leases never add up to more than the limit, so no replica can let
 * more through than the limit; what a replica leased and did not use is lost for the window, so
 * near the limit leases shrink to one call (a user at the edge may be refused a few calls early, never
 * let through late). Pure: the caller asks PostgreSQL and brings the answer (rate-limit.ts).
 */

/** The most a lease takes of a limit: a tenth of a minute's budget at most, at least one call. */
export function leaseSize(limit: number, n: number, knownHits: number | undefined): number {
  const room = knownHits === undefined ? limit : limit - knownHits;
  // a sixth of the limit while the window is fresh, a quarter of what is left as it fills
  return Math.max(n, Math.min(Math.ceil(limit / 6), Math.floor(room / 4)), 1);
}

/** What a lease of `asked` got, the window's count being `hits` after it was added (refusals get 0). */
export function granted(limit: number, asked: number, hits: number): number {
  const before = hits - asked;
  return Math.max(0, Math.min(asked, limit - before));
}

interface Lease {
  left: number;
  /** the window it belongs to ends then (ms since the epoch) */
  windowEnd: number;
  /** the shared count as of the last answer */
  hits: number;
}

export class RateBudget {
  private readonly leases = new Map<string, Lease>();

  /** Spend `n` from a live lease: true if it had room. */
  spend(key: string, n: number, now: number): boolean {
    const l = this.leases.get(key);
    if (!l || l.windowEnd <= now || l.left < n) return false;
    l.left -= n;
    return true;
  }

  /** The shared count last seen for `key` in a window still running (the next lease's size). */
  knownHits(key: string, now: number): number | undefined {
    const l = this.leases.get(key);
    return l && l.windowEnd > now ? l.hits : undefined;
  }

  /** Add a lease's grant, then spend `n` from it: true if that passed. */
  add(key: string, got: number, hits: number, windowEnd: number, n: number, now: number): boolean {
    let l = this.leases.get(key);
    if (!l || l.windowEnd !== windowEnd) {
      if (this.leases.size >= 50_000) this.prune(now);
      this.leases.set(key, (l = { left: 0, windowEnd, hits }));
    }
    l.left += got;
    l.hits = Math.max(l.hits, hits);
    return this.spend(key, n, now);
  }

  private prune(now: number): void {
    for (const [k, l] of this.leases) if (l.windowEnd <= now) this.leases.delete(k);
  }
}
