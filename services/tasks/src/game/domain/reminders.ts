import { isoWeekday, localParts, type IsoDate } from './dates.ts';

/** The cron dispatcher works in 5-minute buckets aligned to UTC (every zone offset is a multiple of 5 minutes). */
export const BUCKET_MINUTES = 5;
const BUCKET_MS = BUCKET_MINUTES * 60_000;

export function bucketStartOf(instant: Date): Date {
  return new Date(Math.floor(instant.getTime() / BUCKET_MS) * BUCKET_MS);
}

export function isBucketStart(instant: Date): boolean {
  return instant.getTime() % BUCKET_MS === 0;
}

/**
 * The wall-clock minutes a bucket covers in one timezone: a user whose reminder time `t` (minutes
 * after local midnight) satisfies `from <= t < to` is due in this bucket, on local date `date`.
 */
export interface LocalWindow {
  timeZone: string;
  date: IsoDate;
  /** ISO weekday of `date`, 1 = Monday … 7 = Sunday */
  weekday: number;
  from: number;
  to: number;
}

/**
 * Map a UTC bucket to local wall-clock minutes. Across a DST gap (spring forward, 01:55 → 03:00)
 * the window stretches over the skipped times, so a reminder set inside the gap still fires, once,
 * at the jump. Across a repeated hour (fall back) the window stays 5 minutes long, so those times
 * match twice; the once-per-local-day sent key keeps the second match from notifying again.
 */
export function localWindow(bucketStart: Date, timeZone: string): LocalWindow {
  const start = localParts(bucketStart, timeZone);
  const end = localParts(new Date(bucketStart.getTime() + BUCKET_MS), timeZone);
  let to: number;
  if (end.date !== start.date) to = 24 * 60;
  else if (end.minuteOfDay > start.minuteOfDay) to = end.minuteOfDay;
  else to = Math.min(24 * 60, start.minuteOfDay + BUCKET_MINUTES);
  return { timeZone, date: start.date, weekday: isoWeekday(start.date), from: start.minuteOfDay, to };
}

export function isDueInWindow(reminderMinute: number, w: LocalWindow): boolean {
  return reminderMinute >= w.from && reminderMinute < w.to;
}

/**
 * Buckets one cron call processes. A missed bucket is caught up when the cron comes back within
 * `CATCH_UP_BUCKETS` buckets (30 minutes); anything older is skipped, because a reminder that late
 * is noise. The caller removes the buckets already done (cron_runs).
 */
export const CATCH_UP_BUCKETS = 6;

export function bucketsToRun(now: Date): Date[] {
  const current = bucketStartOf(now).getTime();
  const out: Date[] = [];
  for (let i = CATCH_UP_BUCKETS - 1; i >= 0; i--) out.push(new Date(current - i * BUCKET_MS));
  return out;
}
