/**
 * Calendar dates (YYYY-MM-DD) in the user's timezone, and the one way the UI writes a date:
 * every screen formats through formatDate / formatDateTime / formatAxisDate, so a date reads the same
 * everywhere ("Wed, 25 Nov", with the year only when it is not this year), in the browser's language.
 */

export function todayIn(timeZone?: string): string {
  return localDate(new Date(), timeZone);
}

/** The calendar date (YYYY-MM-DD) an instant falls on in `timeZone`. */
export function localDate(instant: Date | string, timeZone?: string): string {
  // en-CA formats as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(instant));
}

export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

// Calendar dates are formatted as UTC midnights, so no timezone can shift them to the day before.
const asUtc = (date: string) => new Date(`${date.slice(0, 10)}T00:00:00Z`);
const thisYear = () => new Date().getUTCFullYear();

/** A calendar date: "Wed, 25 Nov" (and ", 2027" outside the current year). */
export function formatDate(date: string | null | undefined): string {
  if (!date) return '';
  const d = asUtc(date);
  return new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', year: d.getUTCFullYear() === thisYear() ? undefined : 'numeric', timeZone: 'UTC' }).format(d);
}

/** An instant: its calendar date in `timeZone` as formatDate writes it, then the time ("Wed, 25 Nov, 14:05"). */
export function formatDateTime(iso: string | null | undefined, timeZone?: string): string {
  if (!iso) return '—';
  const time = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', timeZone }).format(new Date(iso));
  return `${formatDate(localDate(iso, timeZone))}, ${time}`;
}

/** A chart axis label: the same date without the weekday, short enough for a phone ("25 Nov"). */
export function formatAxisDate(date: string): string {
  return new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' }).format(asUtc(date));
}

/** Relative label for a due date: "overdue", "today", "tomorrow" or the date. */
export function dueLabel(date: string | null | undefined, today: string): { text: string; kind: 'overdue' | 'today' | 'later' } | null {
  if (!date) return null;
  const d = date.slice(0, 10);
  if (d < today) return { text: `overdue · ${formatDate(d)}`, kind: 'overdue' };
  if (d === today) return { text: 'today', kind: 'today' };
  if (d === addDays(today, 1)) return { text: 'tomorrow', kind: 'later' };
  return { text: formatDate(d), kind: 'later' };
}
