/**
 * Each user's timezone as this process last saw it. A hint, never the truth: every statement that
 * relies on it checks it against the profile in the same statement, so a zone changed on another
 * replica costs one retry, never a wrong "today". Saves the profile read on the hot paths.
 */
export class ZoneCache {
  private readonly zones = new Map<string, string>();
  private readonly max: number;

  constructor(max = 50_000) {
    this.max = max;
  }

  get(userId: string): string | undefined {
    return this.zones.get(userId);
  }

  set(userId: string, zone: string): void {
    this.zones.delete(userId);
    // the oldest entry goes first (a Map keeps insertion order), so memory stays bounded
    if (this.zones.size >= this.max) this.zones.delete(this.zones.keys().next().value!);
    this.zones.set(userId, zone);
  }
}
