/** Calendar dates (YYYY-MM-DD) in the user's timezone: the only dates a user sees. */

export function todayIn(timeZone?: string): string {
  // en-CA formats as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
}

export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

export function formatDate(date: string | null | undefined): string {
  if (!date) return '';
  const d = new Date(`${date.slice(0, 10)}T00:00:00Z`);
  return new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' }).format(d);
}

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(iso));
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
