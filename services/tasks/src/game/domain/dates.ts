import { addDays, weekday } from '@tasksvc/proto/calendar/dates.ts';

// The tasks service's calendar helpers are the one implementation; the game adds wall-clock parts.
export { addDays, daysBetween, localDate } from '@tasksvc/proto/calendar/dates.ts';

/**
 * Calendar arithmetic in a user's IANA timezone. Dates are `YYYY-MM-DD` strings (never instants at
 * UTC midnight: the reference's defect); instants become dates only through the zone.
 */
export type IsoDate = string;

const partsFormatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = partsFormatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    partsFormatters.set(timeZone, f);
  }
  return f;
}

export interface LocalParts {
  date: IsoDate;
  hour: number;
  minute: number;
  /** minutes since local midnight */
  minuteOfDay: number;
}

/** The wall-clock date and time of `instant` in `timeZone`. */
export function localParts(instant: Date, timeZone: string): LocalParts {
  const p: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(instant)) p[part.type] = part.value;
  const hour = Number(p.hour) % 24;
  const minute = Number(p.minute);
  return { date: `${p.year}-${p.month}-${p.day}`, hour, minute, minuteOfDay: hour * 60 + minute };
}

/** ISO weekday: 1 = Monday … 7 = Sunday. */
export function isoWeekday(date: IsoDate): number {
  return weekday(date) + 1;
}

/** `YYYY-MM` of a date: the shield's once-a-month key. */
export function monthOf(date: IsoDate): string {
  return date.slice(0, 7);
}

/** The Monday–Sunday week containing `date`. */
export function weekOf(date: IsoDate): { start: IsoDate; end: IsoDate } {
  const start = addDays(date, 1 - isoWeekday(date));
  return { start, end: addDays(start, 6) };
}

/** `HH:MM` (24 h) to minutes since midnight; throws on anything else. */
export function parseClock(value: string): number {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  if (!m) throw new Error(`not a time HH:MM: ${value}`);
  return Number(m[1]) * 60 + Number(m[2]);
}
