import { addDays, parseDate, type LocalDate } from '@tasksvc/proto/calendar/dates.ts';
import { occurrenceAfter, type RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';

/**
 * The iCal feed (RFC 5545): every dated task as an all-day VEVENT; RECURRING tasks carry an
 * open-ended RRULE equal to their schedule (see recurrence.ts), starting at their next due date.
 */

export const ICAL_UID_DOMAIN = 'task-service';
const BYDAY = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'];

export interface FeedTask {
  id: string;
  title: string;
  notes: string | null;
  priority: string;
  /** the date the event starts on (due date, or next due date of a RECURRING task) */
  date: LocalDate;
  /** RECURRING tasks: the rule and its anchor */
  recurrence: { rule: RecurrenceRule; anchor: LocalDate } | null;
  updatedAt: Date;
}

const compactDate = (d: LocalDate) => d.replaceAll('-', '');

function utcStamp(t: Date): string {
  return t.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

/** TEXT escaping (RFC 5545 §3.3.11). */
export function escapeText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/;/g, '\\;').replace(/,/g, '\\,').replace(/\r\n|\r|\n/g, '\\n');
}

/** Fold lines longer than 75 octets (§3.1), never splitting a UTF-8 sequence. */
export function foldLine(line: string): string {
  const out: string[] = [];
  let current = '';
  let octets = 0;
  for (const ch of line) {
    const size = Buffer.byteLength(ch);
    const limit = out.length === 0 ? 75 : 74; // continuation lines start with a space
    if (octets + size > limit) {
      out.push(current);
      current = '';
      octets = 0;
    }
    current += ch;
    octets += size;
  }
  out.push(current);
  return out.join('\r\n ');
}

/** Clamped dates of 29th/30th schedules are listed as RDATEs this far ahead (the feed is re-fetched). */
const CLAMP_HORIZON_YEARS = 10;

/** The RRULE value for a schedule. */
export function rrule(rule: RecurrenceRule, anchor: LocalDate): string {
  const a = parseDate(anchor);
  const interval = rule.interval > 1 ? `;INTERVAL=${rule.interval}` : '';
  switch (rule.type) {
    case 'INTERVAL':
      return `FREQ=DAILY;INTERVAL=${rule.interval}`;
    case 'WEEKDAY':
      return `FREQ=WEEKLY${interval};WKST=MO;BYDAY=${[...rule.weekdays].sort((x, y) => x - y).map((d) => BYDAY[d]).join(',')}`;
    case 'MONTHLY':
      // The 31st clamps to every shorter month's last day (-1). The 29th and 30th exist in every month
      // but February: BYMONTHDAY skips those, and `clampedMonthEnds` lists them as RDATEs. (The
      // single-rule form BYMONTHDAY=28,29,30;BYSETPOS=-1 is not expanded by common clients.)
      return `FREQ=MONTHLY${interval};BYMONTHDAY=${a.day === 31 ? -1 : a.day}`;
    case 'YEARLY':
      // Only February varies in length; Feb 29 clamps to the month's last day.
      return `FREQ=YEARLY${interval};BYMONTH=${a.month};${a.month === 2 && a.day === 29 ? 'BYMONTHDAY=-1' : `BYMONTHDAY=${a.day}`}`;
    case 'NTH_WEEKDAY':
      return `FREQ=MONTHLY${interval};BYDAY=${rule.weekOfMonth}${BYDAY[rule.weekdays[0]!]}`;
  }
}

/** Occurrences of a MONTHLY 29th/30th schedule that fall on a clamped (shorter) month end. */
export function clampedMonthEnds(rule: RecurrenceRule, anchor: LocalDate, first: LocalDate): LocalDate[] {
  const day = parseDate(anchor).day;
  if (rule.type !== 'MONTHLY' || (day !== 29 && day !== 30)) return [];
  const until = `${String(parseDate(first).year + CLAMP_HORIZON_YEARS).padStart(4, '0')}${first.slice(4)}`;
  const out: LocalDate[] = [];
  for (let d = first; d <= until; d = occurrenceAfter(rule, anchor, d)) if (parseDate(d).day !== day) out.push(d);
  return out;
}

export function buildCalendar(tasks: FeedTask[], opts: { now: Date; name: string }): string {
  const lines = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Task Service//Tasks//EN', 'CALSCALE:GREGORIAN', 'METHOD:PUBLISH', `X-WR-CALNAME:${escapeText(opts.name)}`];
  const stamp = utcStamp(opts.now);
  for (const t of tasks) {
    lines.push(
      'BEGIN:VEVENT',
      `UID:task-${t.id}@${ICAL_UID_DOMAIN}`,
      `DTSTAMP:${stamp}`,
      `LAST-MODIFIED:${utcStamp(t.updatedAt)}`,
      `DTSTART;VALUE=DATE:${compactDate(t.date)}`,
      `DTEND;VALUE=DATE:${compactDate(addDays(t.date, 1))}`,
      `SUMMARY:${escapeText(t.title)}`,
    );
    if (t.notes) lines.push(`DESCRIPTION:${escapeText(t.notes)}`);
    lines.push(`PRIORITY:${t.priority === 'HIGH' ? 1 : t.priority === 'NORMAL' ? 5 : 9}`, 'TRANSP:TRANSPARENT');
    if (t.recurrence) {
      lines.push(`RRULE:${rrule(t.recurrence.rule, t.recurrence.anchor)}`);
      const extra = clampedMonthEnds(t.recurrence.rule, t.recurrence.anchor, t.date).filter((d) => d !== t.date);
      if (extra.length > 0) lines.push(`RDATE;VALUE=DATE:${extra.map(compactDate).join(',')}`);
    }
    lines.push('END:VEVENT');
  }
  lines.push('END:VCALENDAR');
  return `${lines.map(foldLine).join('\r\n')}\r\n`;
}
