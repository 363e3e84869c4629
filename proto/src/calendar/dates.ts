/**
 * Calendar dates (`YYYY-MM-DD`) and the few places where an instant meets a timezone.
 *
 * A user's "day" is a calendar date in their IANA timezone (the reference stored local dates as
 * UTC midnight and got days wrong near midnight; see reference-behaviour.md, defect 2). Calendar
 * arithmetic here runs on day numbers, which have no timezone and no DST, so only `localDate` and
 * `startOfLocalDay` ever consult the zone database (through Intl).
 */

export type LocalDate = string;

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

export interface DateParts {
  year: number;
  month: number; // 1-12
  day: number; // 1-31
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Parse a calendar date; null when it is not a real date (2026-02-30 is not). */
export function tryParseDate(value: string): DateParts | null {
  const m = DATE_RE.exec(value);
  if (!m) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  return { year, month, day };
}

export function isValidDate(value: string): boolean {
  return tryParseDate(value) !== null;
}

export function parseDate(value: LocalDate): DateParts {
  const p = tryParseDate(value);
  if (!p) throw new RangeError(`not a calendar date: ${value}`);
  return p;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

export function formatDate(p: DateParts): LocalDate {
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}`;
}

/** Days since 1970-01-01 (negative before). Date.UTC is proleptic Gregorian and zone-free. */
export function dayNumber(date: LocalDate): number {
  const p = parseDate(date);
  return Math.round(Date.UTC(p.year, p.month - 1, p.day) / DAY_MS);
}

export function fromDayNumber(n: number): LocalDate {
  const d = new Date(n * DAY_MS);
  return formatDate({ year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() });
}

export function addDays(date: LocalDate, days: number): LocalDate {
  return fromDayNumber(dayNumber(date) + days);
}

export function daysBetween(from: LocalDate, to: LocalDate): number {
  return dayNumber(to) - dayNumber(from);
}

/** 0 = Monday … 6 = Sunday (the reference's convention for recurrence weekdays). */
export function weekday(date: LocalDate): number {
  // 1970-01-01 was a Thursday (3).
  return (((dayNumber(date) + 3) % 7) + 7) % 7;
}

/** Monday-based week number since the week of 1970-01-01; equal for dates in the same week. */
export function weekIndex(date: LocalDate): number {
  return Math.floor((dayNumber(date) + 3) / 7);
}

/** Months since year 0, for month-step arithmetic. */
export function monthIndex(p: { year: number; month: number }): number {
  return p.year * 12 + (p.month - 1);
}

export function fromMonthIndex(index: number): { year: number; month: number } {
  return { year: Math.floor(index / 12), month: (index % 12) + 1 };
}

/** The date `day` in the given month, clamped to its last day (Jan 31 + 1 month = Feb 28/29). */
export function clampedDate(year: number, month: number, day: number): LocalDate {
  return formatDate({ year, month, day: Math.min(day, daysInMonth(year, month)) });
}

/** Add calendar months keeping the day where possible, clamped to the month's end. */
export function addMonths(date: LocalDate, months: number, anchorDay?: number): LocalDate {
  const p = parseDate(date);
  const target = fromMonthIndex(monthIndex(p) + months);
  return clampedDate(target.year, target.month, anchorDay ?? p.day);
}

/**
 * The date of the nth given weekday of a month: n = 1…4 from the start, -1 for the last one.
 * `wd` uses 0 = Monday.
 */
export function nthWeekdayOfMonth(year: number, month: number, wd: number, n: number): LocalDate {
  if (n === -1) {
    const last = clampedDate(year, month, 31);
    const back = (weekday(last) - wd + 7) % 7;
    return addDays(last, -back);
  }
  const first = formatDate({ year, month, day: 1 });
  const forward = (wd - weekday(first) + 7) % 7;
  return addDays(first, forward + (n - 1) * 7);
}

export const compareDates = (a: LocalDate, b: LocalDate): number => (a < b ? -1 : a > b ? 1 : 0);
export const maxDate = (a: LocalDate, b: LocalDate): LocalDate => (a >= b ? a : b);

// ─── Timezones ──────────────────────────────────────────────────────────────────────────────

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    // h23 avoids the "24:00" some engines print for midnight.
    f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True for IANA names the runtime knows (and `UTC`). */
export function isValidTimeZone(timeZone: string): boolean {
  if (!timeZone || timeZone.length > 64) return false;
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

interface WallClock extends DateParts {
  hour: number;
  minute: number;
  second: number;
}

function wallClock(instant: Date, timeZone: string): WallClock {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(instant)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second! };
}

/** Per zone, the local date throughout one UTC minute (every zone's offset today is whole minutes). */
const datesThisMinute = new Map<string, { minute: number; date: LocalDate }>();

/** The calendar date an instant falls on in a timezone. */
export function localDate(instant: Date, timeZone: string): LocalDate {
  // formatting through Intl is the costly part of a request's "today"; the answer holds for the minute
  const minute = Math.floor(instant.getTime() / 60_000);
  const hit = datesThisMinute.get(timeZone);
  if (hit?.minute === minute) return hit.date;
  const date = formatDate(wallClock(instant, timeZone));
  if (datesThisMinute.size >= 10_000) datesThisMinute.clear();
  datesThisMinute.set(timeZone, { minute, date });
  return date;
}

/** Offset of the zone from UTC at an instant, in minutes (Berlin in summer: +120). */
export function utcOffsetMinutes(instant: Date, timeZone: string): number {
  const w = wallClock(instant, timeZone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return Math.round((asUtc - Math.floor(instant.getTime() / 1000) * 1000) / 60_000);
}

/**
 * The first instant of a calendar day in a zone. Usually local midnight; when a DST change skips
 * midnight (e.g. America/Santiago, Asia/Beirut) the day starts at the end of the gap. Found by
 * bisection on "has this day begun yet", which is exact to the millisecond and needs no zone rules.
 */
export function startOfLocalDay(date: LocalDate, timeZone: string): Date {
  const midnightUtc = dayNumber(date) * DAY_MS;
  // Offsets lie within ±14 h, so the day begins inside this window (with margin for the gap).
  let lo = midnightUtc - 15 * 3_600_000; // before the day begins everywhere
  let hi = midnightUtc + 15 * 3_600_000; // after it has begun everywhere
  const begun = (t: number) => localDate(new Date(t), timeZone) >= date;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (begun(mid)) hi = mid;
    else lo = mid;
  }
  return new Date(hi);
}
