import type client from 'prom-client';

/**
 * Key figures read back from the process registry (metrics.ts) for the admin page
 * (docs/observability.md, "The admin page"): the same counters Prometheus scrapes, so the page needs
 * no queries of its own and can never disagree with the dashboard.
 */

export interface Sample {
  labels: Partial<Record<string, string | number>>;
  value: number;
}

/** A counter's samples, or a histogram's `_count` samples (one per label set): counts of events. */
export async function countSamples(metric: client.Counter | client.Histogram | client.Gauge): Promise<Sample[]> {
  const { values } = await metric.get();
  return (values as (Sample & { metricName?: string })[]).filter((v) => v.metricName === undefined || v.metricName.endsWith('_count'));
}

/** The sum of the samples whose labels `where` accepts. */
export function sum(samples: Sample[], where: (labels: Sample['labels']) => boolean = () => true): number {
  let total = 0;
  for (const s of samples) if (where(s.labels)) total += s.value;
  return total;
}

/**
 * Counts over a recent window, from snapshots of counters that only grow. `add` a snapshot now and
 * then (a timer); `over` compares the current counts with the oldest snapshot still inside the window,
 * or the first one while the window is not yet full. A counter that went down (a registry reset)
 * counts from zero rather than going negative.
 */
export class RecentWindow<K extends string> {
  private readonly windowMs: number;
  private snapshots: { at: number; counts: Record<K, number> }[] = [];

  constructor(windowMs: number) {
    this.windowMs = windowMs;
  }

  add(at: number, counts: Record<K, number>): void {
    this.snapshots.push({ at, counts });
    // keep the newest snapshot at or before the window's start, so the window stays full
    while (this.snapshots.length > 1 && this.snapshots[1]!.at <= at - this.windowMs) this.snapshots.shift();
  }

  over(at: number, current: Record<K, number>): { seconds: number; counts: Record<K, number> } {
    const base = this.snapshots[0] ?? { at, counts: current };
    const counts = {} as Record<K, number>;
    for (const k of Object.keys(current) as K[]) {
      const before = base.counts[k] ?? 0;
      counts[k] = current[k] >= before ? current[k] - before : current[k];
    }
    return { seconds: Math.max(0, (at - base.at) / 1000), counts };
  }
}
