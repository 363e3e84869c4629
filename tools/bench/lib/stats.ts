/** Shared benchmark helpers: latency sampling, percentiles and a plain-text table. */

export interface Summary {
  count: number;
  p50: number;
  p99: number;
  mean: number;
  opsPerSec: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Run `op` `count` times with `concurrency` callers in flight and summarise the latencies
 * (milliseconds). `op` gets the operation's index.
 */
export async function measure(count: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<Summary> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const s = performance.now();
        await op(i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { count, p50: percentile(latencies, 50), p99: percentile(latencies, 99), mean: latencies.reduce((a, b) => a + b, 0) / latencies.length, opsPerSec: count / seconds };
}

/** Left-aligned text columns, numbers right-aligned. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i]).length)));
  const line = (r: (string | number)[]) => r.map((c, i) => (typeof rows[0]?.[i] === 'number' ? String(c).padStart(widths[i]!) : String(c).padEnd(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}
