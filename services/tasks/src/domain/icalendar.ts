import ICAL from 'ical.js';
import { addDays, clampedDate, daysInMonth, fromMonthIndex, monthIndex, parseDate, weekday, type LocalDate } from '@tasksvc/proto/calendar/dates.ts';
import { MAX_INTERVAL, occurrenceAfter, validateRule, type RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';

/**
 * iCalendar (RFC 5545) basics shared by the feed (ical.ts, VEVENTs) and the task mapper (vtodo.ts,
 * VTODOs): every line is written and read by ical.js (escaping, folding, parsing); what is ours is
 * how the recurrence model (proto/src/calendar/recurrence.ts) is said as an RRULE and read back.
 */

// ical.js folds after `foldLength` octets and starts each continuation with a space: 74 keeps every
// line, continuations included, within RFC 5545's 75 octets.
ICAL.foldLength = 74;

export const ICAL_UID_DOMAIN = 'task-service';
export const PRODID = '-//Task Service//Tasks//EN';

/** The UID of a task that no client named: stable for the task's life. */
export const taskUid = (taskId: string) => `task-${taskId}@${ICAL_UID_DOMAIN}`;

/** An empty VCALENDAR with the properties every object of ours carries. */
export function newCalendar(extra: Record<string, string> = {}): ICAL.Component {
  const cal = new ICAL.Component('vcalendar');
  cal.addPropertyWithValue('version', '2.0');
  cal.addPropertyWithValue('prodid', PRODID);
  cal.addPropertyWithValue('calscale', 'GREGORIAN');
  for (const [name, value] of Object.entries(extra)) cal.addPropertyWithValue(name, value);
  return cal;
}

/** The text of a component, CRLF line ends (ical.js writes none after the last line). */
export const serialize = (comp: ICAL.Component): string => `${comp.toString()}\r\n`;

export const dateValue = (d: LocalDate): ICAL.Time => {
  const p = parseDate(d);
  return ICAL.Time.fromData({ year: p.year, month: p.month, day: p.day, isDate: true });
};

export const utcValue = (t: Date): ICAL.Time => ICAL.Time.fromJSDate(new Date(Math.floor(t.getTime() / 1000) * 1000), true);

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
/** The calendar date of a parsed DATE or DATE-TIME value, as written (no zone conversion). */
export const dateOf = (t: ICAL.Time): LocalDate => `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}`;

// ─── recurrence ─────────────────────────────────────────────────────────────────────────────

const BYDAY = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'];

/** Clamped dates of 29th/30th schedules are listed as RDATEs this far ahead (the feed is re-fetched). */
const CLAMP_HORIZON_YEARS = 10;

/** The RRULE of a schedule (rule + anchor), as ical.js data. */
export function recurOf(rule: RecurrenceRule, anchor: LocalDate): ICAL.Recur {
  const a = parseDate(anchor);
  const base = { interval: rule.interval, wkst: ICAL.Time.MONDAY };
  switch (rule.type) {
    case 'INTERVAL':
      return ICAL.Recur.fromData({ ...base, freq: 'DAILY' });
    case 'WEEKDAY':
      return ICAL.Recur.fromData({ ...base, freq: 'WEEKLY', byday: [...rule.weekdays].sort((x, y) => x - y).map((d) => BYDAY[d]!) });
    case 'MONTHLY':
      // The 31st clamps to every shorter month's last day (-1). The 29th and 30th exist in every month
      // but February: BYMONTHDAY skips those, and `clampedMonthEnds` lists them as RDATEs. (The
      // single-rule form BYMONTHDAY=28,29,30;BYSETPOS=-1 is not expanded by common clients.)
      return ICAL.Recur.fromData({ ...base, freq: 'MONTHLY', bymonthday: [a.day === 31 ? -1 : a.day] });
    case 'YEARLY':
      // Only February varies in length; Feb 29 clamps to the month's last day.
      return ICAL.Recur.fromData({ ...base, freq: 'YEARLY', bymonth: [a.month], bymonthday: [a.month === 2 && a.day === 29 ? -1 : a.day] });
    case 'NTH_WEEKDAY':
      return ICAL.Recur.fromData({ ...base, freq: 'MONTHLY', byday: [`${rule.weekOfMonth}${BYDAY[rule.weekdays[0]!]}`] });
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

/** A schedule read from an RRULE: the rule, the date it is anchored on and the first date due. */
export interface ReadSchedule {
  rule: RecurrenceRule;
  anchor: LocalDate;
  nextDueDate: LocalDate;
}

export type RecurRead = { ok: true; schedule: ReadSchedule } | { ok: false; message: string };

/** The rule parts RFC 5545 defines; ical.js keeps any other part under its own lower-case name. */
const KNOWN_PARTS = new Set(['freq', 'interval', 'wkst', 'until', 'count', 'bysecond', 'byminute', 'byhour', 'byday', 'bymonthday', 'byyearday', 'byweekno', 'bymonth', 'bysetpos']);
/** A jCal rule part's value (a string or number, or a list of them) as strings. */
const scalar = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');
const list = (v: unknown): string[] => (v === undefined ? [] : Array.isArray(v) ? v.map(scalar) : [scalar(v)]);

/**
 * The model's schedule for an RRULE (its jCal value as ical.js parsed it) on a task due `due`, or
 * why the model cannot hold it, in words for a person. Every rule `recurOf` writes reads back to
 * the same schedule; so do the usual spellings of the same rules (FREQ=WEEKLY without BYDAY,
 * FREQ=DAILY;BYDAY=…, BYDAY=TU;BYSETPOS=2). Rules with an end (COUNT, UNTIL), with times of day, or
 * with several days of the month are refused: a repeating task here has no end and one date a period.
 */
export function readRecur(value: Record<string, unknown>, due: LocalDate): RecurRead {
  const no = (message: string): RecurRead => ({ ok: false, message });
  const unknown = Object.keys(value).filter((k) => !KNOWN_PARTS.has(k));
  if (unknown.length > 0) return no(`repeat rules with ${unknown.map((k) => k.toUpperCase()).join(', ')} are not supported`);
  if (value.count !== undefined || value.until !== undefined) return no('a repeating task here has no end: remove the end of the repetition (COUNT or UNTIL)');
  for (const k of ['bysecond', 'byminute', 'byhour', 'byyearday', 'byweekno'] as const) {
    if (value[k] !== undefined) return no(`repeat rules by ${k.slice(2)} (${k.toUpperCase()}) are not supported`);
  }
  const freq = scalar(value.freq).toUpperCase();
  const interval = value.interval === undefined ? 1 : Number(value.interval);
  const byday = list(value.byday).map((d) => d.toUpperCase());
  const bymonthday = list(value.bymonthday).map(Number);
  const bymonth = list(value.bymonth).map(Number);
  const bysetpos = list(value.bysetpos).map(Number);
  const wkst = value.wkst === undefined ? 'MO' : scalar(value.wkst).toUpperCase();
  const d = parseDate(due);
  const plainDays = byday.map((x) => BYDAY.indexOf(x));
  const rule = (r: Pick<RecurrenceRule, 'type'> & Partial<RecurrenceRule>): RecurrenceRule => ({ interval, weekdays: [], weekOfMonth: null, fixed: true, ...r });
  const checked = (r: RecurrenceRule, anchor: LocalDate): RecurRead => {
    if (!Number.isInteger(interval) || interval < 1 || interval > MAX_INTERVAL[r.type]) return no(`repeat every ${interval}: the interval must be 1 to ${MAX_INTERVAL[r.type]} here`);
    const issues = validateRule(r);
    if (issues.length > 0) return no(issues.map((i) => i.message).join('; '));
    return { ok: true, schedule: { rule: r, anchor, nextDueDate: occurrenceAfter(r, anchor, addDays(due, -1)) } };
  };
  if (bysetpos.length > 0 && !(freq === 'MONTHLY' && bysetpos.length === 1 && byday.length === 1)) return no('repeat rules with BYSETPOS are supported only as "the nth weekday of the month"');
  switch (freq) {
    case 'DAILY': {
      if (bymonthday.length || bymonth.length) return no('daily repeat rules limited to certain days of the month or months are not supported');
      if (byday.length === 0) return checked(rule({ type: 'INTERVAL' }), due);
      if (interval !== 1 || plainDays.includes(-1)) return no('"every N days, only on certain weekdays" is not supported: use a weekly repeat on those days');
      return checked(rule({ type: 'WEEKDAY', weekdays: plainDays }), due);
    }
    case 'WEEKLY': {
      if (bymonthday.length || bymonth.length) return no('weekly repeat rules limited to certain days of the month or months are not supported');
      if (plainDays.includes(-1)) return no(`weekly repeat rules with BYDAY=${byday.join(',')} are not supported`);
      const weekdays = plainDays.length > 0 ? plainDays : [weekday(due)];
      // Weeks are counted Monday-based here: another week start changes which days share a week.
      if (interval > 1 && weekdays.length > 1 && wkst !== 'MO') return no(`weeks start on Monday here: a repeat every ${interval} weeks with the week starting on ${wkst} cannot be held`);
      return checked(rule({ type: 'WEEKDAY', weekdays }), due);
    }
    case 'MONTHLY': {
      if (bymonth.length) return no('monthly repeat rules limited to certain months are not supported');
      if (byday.length > 0) {
        if (bymonthday.length) return no('monthly repeat rules by both weekday and day of the month are not supported');
        if (byday.length !== 1) return no('monthly repeat rules on several weekdays are not supported');
        const m = /^([+-]?\d+)?(MO|TU|WE|TH|FR|SA|SU)$/.exec(byday[0]!);
        const n = m?.[1] !== undefined ? Number(m[1]) : bysetpos[0];
        if (!m || n === undefined || ![1, 2, 3, 4, -1].includes(n)) return no('monthly repeats on a weekday must be its 1st, 2nd, 3rd, 4th or last one in the month');
        return checked(rule({ type: 'NTH_WEEKDAY', weekdays: [BYDAY.indexOf(m[2]!)], weekOfMonth: n }), due);
      }
      if (bymonthday.length > 1) return no('monthly repeat rules on several days of the month are not supported');
      const day = bymonthday[0] ?? d.day;
      if (!Number.isInteger(day) || day === 0 || day < -1 || day > 31) return no(`monthly repeats on day ${day} of the month are not supported (1 to 31, or -1 for the last day)`);
      return checked(rule({ type: 'MONTHLY' }), monthlyAnchor(day === -1 ? 31 : day, interval, due));
    }
    case 'YEARLY': {
      if (byday.length) return no('yearly repeat rules on weekdays are not supported');
      if (bymonth.length > 1 || bymonthday.length > 1) return no('yearly repeat rules on several dates are not supported');
      const month = bymonth[0] ?? d.month;
      const raw = bymonthday[0] ?? (bymonth.length ? undefined : d.day);
      if (raw === undefined) return no('yearly repeat rules on every day of a month are not supported');
      // -1 is the month's last day: the model holds it for February (Feb 29, clamped) and 31-day months
      const day = raw === -1 ? (month === 2 ? 29 : daysInMonth(2001, month) === 31 ? 31 : 0) : raw;
      if (!Number.isInteger(month) || month < 1 || month > 12 || day < 1 || day > daysInMonth(2000, month)) return no(`yearly repeats on month ${month}, day ${raw} are not supported`);
      return checked(rule({ type: 'YEARLY' }), monthlyAnchor(day, 12 * interval, due, month));
    }
    default:
      return no(freq ? `repeat rules by ${freq.toLowerCase()} frequency are not supported` : 'the repeat rule has no FREQ');
  }
}

/**
 * An anchor for a schedule on `day` of every `step` months (of `month` only, for yearly ones) that
 * yields `due` when due falls on it or on its clamped month end: the latest date of that day, in a
 * month of the same period chain, that is not after the due date and exists exactly (Feb 29 in a
 * leap year, the 31st in a 31-day month). A due date off the rule starts it at the next date on it.
 */
function monthlyAnchor(day: number, step: number, due: LocalDate, month?: number): LocalDate {
  const d = parseDate(due);
  let base = monthIndex(d);
  if (month !== undefined) base -= (((d.month - month) % 12) + 12) % 12; // the rule's month in due's year or the one before
  for (let k = 0; k < 48; k++) {
    const m = fromMonthIndex(base - k * step);
    if (day <= daysInMonth(m.year, m.month)) {
      const candidate = clampedDate(m.year, m.month, day);
      if (candidate <= due) return candidate;
    }
  }
  // no such month behind (the chain never has the day): start the schedule on due's own period
  const m = fromMonthIndex(base);
  return clampedDate(m.year, m.month, day);
}
