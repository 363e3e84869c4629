import { CRON_BUCKET_MINUTES, CRON_BUCKET_MS } from '@tasksvc/proto';
import { isoWeekday, localParts, type IsoDate } from './dates.ts';

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
  const end = localParts(new Date(bucketStart.getTime() + CRON_BUCKET_MS), timeZone);
  let to: number;
  if (end.date !== start.date) to = 24 * 60;
  else if (end.minuteOfDay > start.minuteOfDay) to = end.minuteOfDay;
  else to = Math.min(24 * 60, start.minuteOfDay + CRON_BUCKET_MINUTES);
  return { timeZone, date: start.date, weekday: isoWeekday(start.date), from: start.minuteOfDay, to };
}

export function isDueInWindow(reminderMinute: number, w: LocalWindow): boolean {
  return reminderMinute >= w.from && reminderMinute < w.to;
}

