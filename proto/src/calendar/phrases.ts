/**
 * The phrase parser: one line of quick-add text → what the task is, when it is due, how it repeats,
 * its topic, priority and reminders, and what was NOT understood (kept in the title, with a hint).
 * Pure (no I/O, no clock of its own), so the UI's quick add and onboarding and the server's imports
 * (Todoist's DATE column) read phrases alike.
 *
 * - Dates and times: chrono-node's English parser (`tomorrow 18:30`, `Dec 12`, `in 3 days`, `end of
 *   month`, `at 9am`, `next fri`), run on what the project's own grammar left, and filtered so that
 *   ordinary words stay words ("sat nav", "Sun cream", "March on", "Call Tom").
 * - Recurrence: the project's grammar below, into `RecurrenceRule` (`recurrence.ts`) — `daily`,
 *   `weekdays`, `every mon wed fri`, `every 2nd tue`, `monthly on the 1st`, `every year on Dec 12`,
 *   `every other week`, `every 3 months on the 15th`, `every! 3 days` (counted from completion).
 *   A rule that names its day(s) is schedule-based (`fixed`), so completing late never moves it.
 * - `!high` `!!` `p1` · `!normal` · `!someday` `!low`: priority. `#topic`: a topic by (prefix of) name.
 * - `remind me in 2 hours` / `remind me at 5pm` / `remind me 30 min before` / `remind me to …`.
 * A phrase that starts like one of these but is not understood (`every blue moon`, `#nosuchtopic`,
 * `until friday`) stays in the title and is listed in `notUnderstood`: never a silent wrong rule.
 */
import * as chrono from 'chrono-node/en';
import { addDays, daysInMonth, formatDate, parseDate, weekday, type LocalDate } from './dates.ts';
import { startSchedule, type RecurrenceRule } from './recurrence.ts';
import { localInstant, MAX_BEFORE_DUE_MINUTES, MAX_REMINDERS, type Reminder } from './reminders.ts';

export type Priority = 'HIGH' | 'NORMAL' | 'SOMEDAY';
export type { Reminder };

export interface PhraseTopic {
  id: string;
  title: string;
}

export type PhrasePartKind = 'date' | 'time' | 'recurrence' | 'priority' | 'topic' | 'reminder';

/** A recognised piece of the line, for chips and in-place highlighting ([start, end) offsets). */
export interface PhrasePart {
  kind: PhrasePartKind;
  text: string;
  label: string;
  start: number;
  end: number;
}

/** A piece that looked meant but was not understood; it stays in the title. */
export interface NotUnderstood {
  text: string;
  start: number;
  end: number;
  hint: string;
}

export interface PhraseContext {
  /** the user's current calendar date (in their zone) */
  today: LocalDate;
  /** now, for "in 2 hours" and reminder instants (default: the moment of the call) */
  now?: Date;
  /** the user's IANA zone, for turning a wall-clock reminder time into an instant (default: the runtime's) */
  timeZone?: string;
  /** the user's topics; without them `#name` is returned by name with `id: null` */
  topics?: PhraseTopic[];
}

export interface QuickAddParse {
  title: string;
  dueDate: LocalDate | null;
  /** "HH:MM", local time of day; only with a dueDate */
  dueTime: string | null;
  recurrence: RecurrenceRule | null;
  topic: { name: string; id: string | null } | null;
  priority: Priority | null;
  reminders: Reminder[];
  notUnderstood: NotUnderstood[];
  parts: PhrasePart[];
}

// ─── Words ──────────────────────────────────────────────────────────────────────────────────

const WEEKDAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const WEEKDAY_FORMS: Record<string, number> = {};
WEEKDAY_NAMES.forEach((name, i) => {
  const full = name.toLowerCase();
  for (const f of [full, full.slice(0, 3), `${full}s`]) WEEKDAY_FORMS[f] = i;
});
Object.assign(WEEKDAY_FORMS, { tues: 1, weds: 2, thur: 3, thurs: 3, fris: 4 });
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const MONTH_FORMS: Record<string, number> = {};
MONTH_NAMES.forEach((name, i) => {
  MONTH_FORMS[name.toLowerCase()] = i + 1;
  MONTH_FORMS[name.toLowerCase().slice(0, 3)] = i + 1;
});
MONTH_FORMS.sept = 9;
const ORDINAL_WORDS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth', 'tenth'];
const NUMBER_WORDS: Record<string, number> = { a: 1, an: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10, twelve: 12 };
type Unit = 'day' | 'week' | 'month' | 'year';
const UNITS: Record<string, Unit> = { day: 'day', days: 'day', week: 'week', weeks: 'week', wk: 'week', wks: 'week', month: 'month', months: 'month', year: 'year', years: 'year', yr: 'year', yrs: 'year' };
const DURATION_MINUTES: Record<string, number> = { m: 1, min: 1, mins: 1, minute: 1, minutes: 1, h: 60, hr: 60, hrs: 60, hour: 60, hours: 60, d: 1440, day: 1440, days: 1440, week: 10080, weeks: 10080 };

const weekdayOf = (w: string | undefined): number | undefined => (w === undefined ? undefined : WEEKDAY_FORMS[w]);
const isPluralWeekday = (w: string | undefined) => w !== undefined && w.endsWith('s') && weekdayOf(w) !== undefined && !['tues', 'weds', 'thurs', 'fris'].includes(w);
/** 1st…31st, first…tenth → the number; "last" → -1. */
function ordinal(w: string | undefined): number | undefined {
  if (w === undefined) return undefined;
  if (w === 'last') return -1;
  const m = /^(\d{1,2})(st|nd|rd|th)$/.exec(w);
  if (m) return Number(m[1]) >= 1 && Number(m[1]) <= 31 ? Number(m[1]) : undefined;
  const i = ORDINAL_WORDS.indexOf(w);
  return i >= 0 ? i + 1 : undefined;
}
function count(w: string | undefined): number | undefined {
  if (w === undefined) return undefined;
  if (/^\d{1,3}$/.test(w)) return Number(w);
  return NUMBER_WORDS[w];
}
const pad2 = (n: number) => String(n).padStart(2, '0');
const ordinalText = (n: number) => (n === -1 ? 'last' : `${n}${n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`);

// ─── Tokens ─────────────────────────────────────────────────────────────────────────────────

interface Token {
  /** lower case, without a trailing comma or full stop */
  w: string;
  start: number;
  end: number;
}

function tokenize(input: string): Token[] {
  const out: Token[] = [];
  for (const m of input.matchAll(/[^\s,;/&]+|&/gu)) {
    let text = m[0];
    const start = m.index;
    // a sentence's full stop is not part of the word ("on the 1st."), an abbreviation's dot is
    if (text.length > 1 && /[.!?]$/.test(text) && !/^[!@#*]/.test(text) && !/^(every|ev)!$/i.test(text) && !/^[ap]\.m\.$/i.test(text)) text = text.replace(/[.!?]+$/, '') || text;
    out.push({ w: text.toLowerCase(), start, end: start + text.length });
  }
  return out;
}

// ─── Recurrence grammar ─────────────────────────────────────────────────────────────────────

/** What a recurrence phrase says; the rule's start date is worked out once the due date is known. */
interface RuleDraft {
  rule: Omit<RecurrenceRule, 'weekdays'> & { weekdays: number[] };
  /** MONTHLY / YEARLY: the day of month the schedule must be anchored on */
  monthDay?: number;
  /** YEARLY: the month (1-12) the schedule must be anchored on */
  month?: number;
  /** WEEKDAY without named days: repeat on the start date's weekday */
  weekdayFromStart?: boolean;
}

interface RuleMatch {
  /** tokens taken */
  n: number;
  draft: RuleDraft | null;
  /** when draft is null: why the phrase was not understood */
  hint?: string;
}

const rule = (type: RecurrenceRule['type'], interval: number, weekdays: number[] = [], weekOfMonth: number | null = null): RuleDraft['rule'] => ({ type, interval, weekdays, weekOfMonth, fixed: true });

/** A list of weekdays at `i` ("mon wed fri", "monday, wednesday and friday", "tue/thu"). */
function weekdayList(t: Token[], i: number): { days: number[]; n: number } | null {
  const days: number[] = [];
  let j = i;
  while (j < t.length) {
    const d = weekdayOf(t[j]!.w);
    if (d !== undefined) {
      if (!days.includes(d)) days.push(d);
      j++;
      continue;
    }
    // "and" / "&" only between two days
    if ((t[j]!.w === 'and' || t[j]!.w === '&') && days.length > 0 && weekdayOf(t[j + 1]?.w) !== undefined) {
      j++;
      continue;
    }
    break;
  }
  return days.length > 0 ? { days: days.sort((a, b) => a - b), n: j - i } : null;
}

/** "of the month", "of every month", "of each month", "of month" after an nth weekday or day. */
function ofTheMonth(t: Token[], i: number): number {
  if (t[i]?.w !== 'of') return 0;
  if ((t[i + 1]?.w === 'the' || t[i + 1]?.w === 'every' || t[i + 1]?.w === 'each') && t[i + 2]?.w === 'month') return 3;
  if (t[i + 1]?.w === 'month') return 2;
  return 0;
}

/** A day of month at `i`: "the 1st", "1st", "the 15th"; with its tokens. */
function monthDayAt(t: Token[], i: number): { day: number; n: number } | null {
  const the = t[i]?.w === 'the' ? 1 : 0;
  const d = ordinal(t[i + the]?.w);
  if (d === undefined || d === -1) return null;
  if (weekdayOf(t[i + the + 1]?.w) !== undefined) return null; // "the 2nd tue" is an nth weekday
  return { day: d, n: the + 1 };
}

/** An nth weekday at `i`: "the 2nd tue", "last friday", "first monday". */
function nthWeekdayAt(t: Token[], i: number): { nth: number; day: number; n: number } | null {
  const the = t[i]?.w === 'the' ? 1 : 0;
  const nth = ordinal(t[i + the]?.w);
  const day = weekdayOf(t[i + the + 1]?.w);
  if (nth === undefined || day === undefined) return null;
  return { nth, day, n: the + 2 };
}

/** A month and day at `i`: "dec 12", "december 12th", "12 dec", "the 12th of december". */
function monthAndDayAt(t: Token[], i: number): { month: number; day: number; n: number } | null {
  const a = t[i]?.w;
  const b = t[i + 1]?.w;
  const dayOf = (w: string | undefined) => (w !== undefined && /^\d{1,2}$/.test(w) ? Number(w) : ordinal(w));
  const m1 = a === undefined ? undefined : MONTH_FORMS[a];
  if (m1 !== undefined && dayOf(b) !== undefined && dayOf(b)! > 0) return { month: m1, day: dayOf(b)!, n: 2 };
  const the = a === 'the' ? 1 : 0;
  const d = dayOf(t[i + the]?.w);
  const of = t[i + the + 1]?.w === 'of' ? 1 : 0;
  const m2 = t[i + the + 1 + of]?.w;
  if (d !== undefined && d > 0 && m2 !== undefined && MONTH_FORMS[m2] !== undefined) return { month: MONTH_FORMS[m2], day: d, n: the + 2 + of };
  return null;
}

/** Optional "on <days>" after a weekly rule. */
function onWeekdays(t: Token[], i: number): { days: number[]; n: number } | null {
  const on = t[i]?.w === 'on' ? 1 : 0;
  const list = weekdayList(t, i + on);
  return list ? { days: list.days, n: on + list.n } : null;
}

/** The rest of a monthly rule: "on the 1st", "on the 2nd tue", "on the last friday". */
function monthlyDetail(t: Token[], i: number, interval: number): RuleMatch | null {
  const on = t[i]?.w === 'on' ? 1 : 0;
  const nth = nthWeekdayAt(t, i + on);
  if (nth) {
    if (nth.nth > 4) return { n: on + nth.n, draft: null, hint: 'only the 1st to 4th or the last weekday of a month can repeat' };
    return { n: on + nth.n, draft: { rule: rule('NTH_WEEKDAY', interval, [nth.day], nth.nth) } };
  }
  const md = monthDayAt(t, i + on);
  if (md) return { n: on + md.n, draft: { rule: rule('MONTHLY', interval), monthDay: md.day } };
  if (on === 0 && t[i]?.w === 'on' && (t[i + 1]?.w === 'the' || t[i + 1]?.w === 'last')) return null;
  return null;
}

function yearlyDetail(t: Token[], i: number, interval: number): RuleMatch | null {
  const on = t[i]?.w === 'on' ? 1 : 0;
  const md = monthAndDayAt(t, i + on);
  return md ? { n: on + md.n, draft: { rule: rule('YEARLY', interval), month: md.month, monthDay: md.day } } : null;
}

/** A rule that starts at token i, or null. */
function ruleAt(t: Token[], i: number): RuleMatch | null {
  const w = t[i]!.w;
  const star = w.startsWith('*') ? w.slice(1) : w;
  const adverb: Record<string, Unit> = { daily: 'day', everyday: 'day', weekly: 'week', monthly: 'month', yearly: 'year', annually: 'year' };
  if (adverb[star]) {
    const unit = adverb[star];
    const more = unitRule(t, i + 1, unit, 1);
    return { ...more, n: more.n + 1 };
  }
  // "weekdays", "on weekdays", "mondays", "on mondays and thursdays"
  const on = w === 'on' ? 1 : 0;
  const x = t[i + on]?.w;
  if (x === 'weekdays' || x === 'workdays') return { n: on + 1, draft: { rule: rule('WEEKDAY', 1, [0, 1, 2, 3, 4]) } };
  if (x === 'weekends') return { n: on + 1, draft: { rule: rule('WEEKDAY', 1, [5, 6]) } };
  if (isPluralWeekday(x)) {
    const list = weekdayList(t, i + on);
    if (list) return { n: on + list.n, draft: { rule: rule('WEEKDAY', 1, list.days) } };
  }
  // "on the 1st of every month", "the 2nd tuesday of each month"
  if (on || w === 'the') {
    const nth = nthWeekdayAt(t, i + on);
    if (nth) {
      const of = ofTheMonth(t, i + on + nth.n);
      if (of && t[i + on + nth.n + 1]?.w !== 'the') {
        if (nth.nth > 4) return { n: on + nth.n + of, draft: null, hint: 'only the 1st to 4th or the last weekday of a month can repeat' };
        return { n: on + nth.n + of, draft: { rule: rule('NTH_WEEKDAY', 1, [nth.day], nth.nth) } };
      }
    }
    const md = monthDayAt(t, i + on);
    if (md) {
      const of = ofTheMonth(t, i + on + md.n);
      if (of && t[i + on + md.n + 1]?.w !== 'the') return { n: on + md.n + of, draft: { rule: rule('MONTHLY', 1), monthDay: md.day } };
    }
  }
  if (w !== 'every' && w !== 'each' && w !== 'every!' && w !== 'ev' && w !== 'ev!') return null;
  const m = everyRest(t, i + 1);
  if (!m) return { n: 1 + phraseLength(t, i + 1), draft: null, hint: 'not a repetition this app knows; pick one in the editor' };
  if (m.draft && w.endsWith('!')) m.draft.rule.fixed = false;
  return { ...m, n: m.n + 1 };
}

/** How many words of a not-understood "every …" to point at (up to the next recognisable marker). */
function phraseLength(t: Token[], i: number): number {
  let n = 0;
  while (i + n < t.length && n < 3 && !/^[#!@*]/.test(t[i + n]!.w) && !['at', 'remind', 'starting', 'from'].includes(t[i + n]!.w)) n++;
  return n;
}

/** After "every": the rule's words. */
function everyRest(t: Token[], i: number): RuleMatch | null {
  const a = t[i]?.w;
  if (a === undefined) return null;
  if (UNITS[a] && !a.endsWith('s')) return unitRule(t, i + 1, UNITS[a], 1, 1);
  if (a === 'other' && t[i + 1]) {
    const u = UNITS[t[i + 1]!.w];
    if (u) return unitRule(t, i + 2, u, 2, 2);
    const d = weekdayOf(t[i + 1]!.w);
    if (d !== undefined) return { n: 2, draft: { rule: rule('WEEKDAY', 2, [d]) } };
  }
  if (a === 'fortnight') return unitRule(t, i + 1, 'week', 2, 1);
  if (a === 'weekday' || a === 'weekdays' || a === 'workday' || a === 'workdays') return { n: 1, draft: { rule: rule('WEEKDAY', 1, [0, 1, 2, 3, 4]) } };
  if (a === 'weekend' || a === 'weekends') return { n: 1, draft: { rule: rule('WEEKDAY', 1, [5, 6]) } };
  const c = count(a);
  if (c !== undefined && a !== 'a' && a !== 'an') {
    const u = UNITS[t[i + 1]?.w ?? ''];
    if (u) return unitRule(t, i + 2, u, c, 2);
    if (['hour', 'hours', 'minute', 'minutes', 'min', 'mins'].includes(t[i + 1]?.w ?? '')) return { n: 2, draft: null, hint: 'tasks repeat by days at the finest; use a reminder for hours' };
  }
  if (['hour', 'minute', 'morning', 'evening', 'night'].includes(a)) return null;
  const nth = nthWeekdayAt(t, i);
  if (nth) {
    const of = ofTheMonth(t, i + nth.n);
    if (nth.nth > 4) return { n: nth.n + of, draft: null, hint: 'only the 1st to 4th or the last weekday of a month can repeat' };
    return { n: nth.n + of, draft: { rule: rule('NTH_WEEKDAY', 1, [nth.day], nth.nth) } };
  }
  const md = monthAndDayAt(t, i);
  if (md) return { n: md.n, draft: { rule: rule('YEARLY', 1), month: md.month, monthDay: md.day } };
  const day = monthDayAt(t, i);
  if (day) return { n: day.n + ofTheMonth(t, i + day.n), draft: { rule: rule('MONTHLY', 1), monthDay: day.day } };
  const list = weekdayList(t, i);
  if (list) return { n: list.n, draft: { rule: rule('WEEKDAY', 1, list.days) } };
  return null;
}

/** "every N <unit>" with what may follow it ("on mon", "on the 1st", "on Dec 12"). `taken` = words before. */
function unitRule(t: Token[], i: number, unit: Unit, interval: number, taken = 0): RuleMatch {
  const done = (n: number, draft: RuleDraft | null, hint?: string): RuleMatch => ({ n: taken + n, draft, ...(hint ? { hint } : {}) });
  switch (unit) {
    case 'day':
      return done(0, { rule: rule('INTERVAL', interval) });
    case 'week': {
      const days = onWeekdays(t, i);
      if (days) return done(days.n, { rule: rule('WEEKDAY', interval, days.days) });
      return done(0, { rule: rule('WEEKDAY', interval), weekdayFromStart: true });
    }
    case 'month': {
      const more = monthlyDetail(t, i, interval);
      if (more) return done(more.n, more.draft, more.hint);
      return done(0, { rule: rule('MONTHLY', interval) });
    }
    case 'year': {
      const more = yearlyDetail(t, i, interval);
      if (more) return done(more.n, more.draft);
      return done(0, { rule: rule('YEARLY', interval) });
    }
  }
}

/** "after completion" / "after done" / "from completion": the rule counts from the completion day. */
function afterCompletion(t: Token[], i: number): number {
  const a = t[i]?.w;
  const b = t[i + 1]?.w;
  if ((a === 'after' || a === 'from') && (b === 'completion' || b === 'done' || b === 'completing' || b === 'finishing')) return 2;
  return 0;
}

/** The first date on or after `from` that is the `day`th of its month (null for a day past 31). */
function nextMonthDay(from: LocalDate, day: number): LocalDate | null {
  const p = parseDate(from);
  for (let k = 0; k < 13; k++) {
    const m = ((p.month - 1 + k) % 12) + 1;
    const y = p.year + Math.floor((p.month - 1 + k) / 12);
    if (day > daysInMonth(y, m)) continue;
    const d = formatDate({ year: y, month: m, day });
    if (d >= from) return d;
  }
  return null;
}

/** The first date of the rule's schedule on or after `from`, with the anchor the rule needs. */
function scheduleStart(draft: RuleDraft, from: LocalDate): { rule: RecurrenceRule; dueDate: LocalDate } {
  let anchor = from;
  const r: RecurrenceRule = { ...draft.rule, weekdays: [...draft.rule.weekdays] };
  if (draft.weekdayFromStart) r.weekdays = [weekday(from)];
  // "every 2 weeks on tue": the schedule's weeks count from the first of its days, not from today's week
  if (r.type === 'WEEKDAY') while (!r.weekdays.includes(weekday(anchor))) anchor = addDays(anchor, 1);
  if (draft.monthDay !== undefined) {
    // the schedule is anchored on a date with that day (and month): the first one on or after `from`
    const p = parseDate(from);
    if (draft.month !== undefined) {
      for (let y = p.year; ; y++) {
        if (draft.monthDay <= daysInMonth(y, draft.month)) {
          const d = formatDate({ year: y, month: draft.month, day: draft.monthDay });
          if (d >= from) {
            anchor = d;
            break;
          }
        }
        if (y > p.year + 8) break;
      }
    } else {
      anchor = nextMonthDay(from, draft.monthDay) ?? from;
    }
  }
  const s = startSchedule(r, anchor);
  return { rule: r, dueDate: s.nextDueDate };
}

/** Words for a rule ("Every 2nd Tuesday of the month", "Every Monday, Wednesday and Friday"). */
export function describeRecurrence(r: RecurrenceRule, dueDate?: LocalDate | null): string {
  const every = (unit: string) => (r.interval === 1 ? `Every ${unit}` : r.interval === 2 ? `Every other ${unit}` : `Every ${r.interval} ${unit}s`);
  const list = (days: number[]) => {
    const names = days.map((d) => WEEKDAY_NAMES[d]!);
    return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
  };
  let text: string;
  switch (r.type) {
    case 'INTERVAL':
      text = r.interval === 1 ? 'Every day' : every('day');
      break;
    case 'WEEKDAY': {
      const days = [...r.weekdays].sort((a, b) => a - b);
      const set = days.join();
      const what = set === '0,1,2,3,4' ? 'weekday' : set === '5,6' ? 'weekend day' : null;
      if (r.interval === 1) text = what ? `Every ${what}` : `Every ${list(days)}`;
      else text = `${every('week')} on ${what ? `${what}s` : list(days)}`;
      break;
    }
    case 'MONTHLY': {
      const day = dueDate ? parseDate(dueDate).day : null;
      text = every('month') + (day ? ` on the ${ordinalText(day)}` : '');
      break;
    }
    case 'NTH_WEEKDAY':
      text = `${r.interval === 1 ? 'Every' : every('month') + ', the'} ${ordinalText(r.weekOfMonth ?? 1)} ${WEEKDAY_NAMES[r.weekdays[0] ?? 0]}${r.interval === 1 ? ' of the month' : ''}`;
      break;
    case 'YEARLY': {
      const p = dueDate ? parseDate(dueDate) : null;
      text = every('year') + (p ? ` on ${MONTH_NAMES[p.month - 1]!.slice(0, 3)} ${p.day}` : '');
      break;
    }
  }
  return r.fixed ? text : `${text}, counted from completion`;
}

// ─── Dates and times (chrono) ───────────────────────────────────────────────────────────────

interface DateHit {
  start: number;
  end: number;
  text: string;
  date: LocalDate;
  time: string | null;
  /** the wall clock (as UTC fields) of the hit, for reminders */
  wall: number;
  /** a relative phrase ("in 2 hours"): its instant is now plus the delta, exactly */
  relative: boolean;
  /** the phrase names a day (not just a time, which implies today or tomorrow) */
  hasDate: boolean;
}

/** The user's wall clock now, as a Date whose UTC fields are that wall clock (chrono runs at offset 0). */
function wallClockNow(ctx: PhraseContext): Date {
  const now = ctx.now ?? new Date();
  const p = parseDate(ctx.today);
  let hh = now.getHours();
  let mm = now.getMinutes();
  if (ctx.timeZone) {
    const parts = new Intl.DateTimeFormat('en-US', { timeZone: ctx.timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(now);
    hh = Number(parts.find((x) => x.type === 'hour')?.value ?? hh);
    mm = Number(parts.find((x) => x.type === 'minute')?.value ?? mm);
  }
  return new Date(Date.UTC(p.year, p.month - 1, p.day, hh, mm, now.getSeconds()));
}

/** The instant of a wall-clock time (the UTC fields of `wall`) in the user's zone (or the runtime's). */
function instantOf(wall: number, timeZone: string | undefined): Date {
  const w = new Date(wall);
  if (!timeZone) return new Date(w.getUTCFullYear(), w.getUTCMonth(), w.getUTCDate(), w.getUTCHours(), w.getUTCMinutes());
  return localInstant(w.toISOString().slice(0, 10), `${pad2(w.getUTCHours())}:${pad2(w.getUTCMinutes())}`, timeZone);
}

const SHORT_WEEKDAY = /^(mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)$/i;
const MONTH_ONLY = /^(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*$/i;

/** chrono's hits in `text` (where the grammar's words are blanked out), without the ones that are ordinary words. */
function dateHits(text: string, input: string, ctx: PhraseContext): { hits: DateHit[]; rejected: NotUnderstood[] } {
  const ref = wallClockNow(ctx);
  const results = chrono.casual.parse(text, { instant: ref, timezone: 0 }, { forwardDate: true });
  const hits: DateHit[] = [];
  const rejected: NotUnderstood[] = [];
  for (const r of results) {
    const t = r.text.trim();
    let start = r.index + r.text.indexOf(t);
    const end = start + t.length;
    const before = text.slice(0, start);
    const prefixed = input[start - 1] === '@' || /\b(on|next|this|by|due|until|till|starting|from)\s+$/i.test(before);
    // ordinary words: "sat nav", "Sun cream", "March on", "now", "3 days" without "in"
    if (SHORT_WEEKDAY.test(t) && !prefixed) continue;
    if (input[start - 1] === '@') start--; // "@fri", "@2026-12-01": the marker goes with the date
    if (MONTH_ONLY.test(t) && !r.start.isCertain('day')) continue;
    if (/^now$/i.test(t)) continue;
    // part of a longer word or name ("Monday.com", "2026-12-01x")
    if (/^[.\-_/]?[\p{L}\p{N}]/u.test(input.slice(end, end + 2)) && /^[.\-_/]/.test(input.slice(end, end + 1))) continue;
    if (/^(\d+|a|an|half an?)\s+\w+$/i.test(t) && r.tags().has('result/relativeDate')) continue;
    if (r.end) {
      rejected.push({ text: t, start, end, hint: 'a date range; a task has one due date' });
      continue;
    }
    const c = r.start;
    let date = formatDate({ year: c.get('year')!, month: c.get('month')!, day: c.get('day')! });
    // "next fri" is the coming Friday (never today), as this app has always read it
    // and "friday", "on fri", "@fri" on a Friday mean the one a week on; "this fri" may be today
    const named = /^(?:next\s+|on\s+)?([a-z]+)\b/i.exec(t);
    if (named && !/^this\b/i.test(t) && weekdayOf(named[1]!.toLowerCase()) !== undefined && !c.isCertain('day')) {
      const d = weekdayOf(named[1]!.toLowerCase())!;
      date = addDays(ctx.today, (d - weekday(ctx.today) + 7) % 7 || 7);
    }
    const certainTime = c.isCertain('hour');
    const time = certainTime ? `${pad2(c.get('hour')!)}:${pad2(c.get('minute') ?? 0)}` : null;
    const wall = Date.UTC(c.get('year')!, c.get('month')! - 1, c.get('day')!, c.get('hour') ?? 9, c.get('minute') ?? 0);
    hits.push({ start, end, text: input.slice(start, end), date, time, wall, relative: r.tags().has('result/relativeDateAndTime'), hasDate: c.isCertain('day') || c.isCertain('weekday') || c.isCertain('month') });
  }
  return { hits, rejected };
}

// ─── The parser ─────────────────────────────────────────────────────────────────────────────

const PRIORITIES: Record<string, Priority> = {
  '!high': 'HIGH',
  '!h': 'HIGH',
  '!!': 'HIGH',
  '!1': 'HIGH',
  p1: 'HIGH',
  '!normal': 'NORMAL',
  '!n': 'NORMAL',
  '!2': 'NORMAL',
  p2: 'NORMAL',
  p3: 'NORMAL',
  p4: 'NORMAL',
  '!someday': 'SOMEDAY',
  '!s': 'SOMEDAY',
  '!low': 'SOMEDAY',
  '!3': 'SOMEDAY',
};
const PRIORITY_LABEL: Record<Priority, string> = { HIGH: 'High priority', NORMAL: 'Normal priority', SOMEDAY: 'Someday' };

/** Words that join a date to the title ("Pay rent by friday"); they go with the date. */
const CONNECTORS = new Set(['on', 'at', 'by', 'due', 'starting', 'from', 'beginning']);

function formatDueLabel(date: LocalDate, today: LocalDate): string {
  if (date === today) return 'today';
  if (date === addDays(today, 1)) return 'tomorrow';
  const p = parseDate(date);
  const name = WEEKDAY_NAMES[weekday(date)]!.slice(0, 3);
  return `${name} ${p.day} ${MONTH_NAMES[p.month - 1]!.slice(0, 3)}${p.year !== parseDate(today).year ? ` ${p.year}` : ''}`;
}

export function parseQuickAdd(input: string, ctx: PhraseContext): QuickAddParse {
  const tokens = tokenize(input);
  const parts: PhrasePart[] = [];
  const notUnderstood: NotUnderstood[] = [];
  const taken: Array<[number, number]> = [];
  const take = (start: number, end: number) => {
    if (end > start) taken.push([start, end]);
  };
  /** kept in the title but not read as a date ("until friday") */
  const hidden: Array<[number, number]> = [];
  const span = (i: number, n: number) => ({ start: tokens[i]!.start, end: tokens[i + n - 1]!.end });
  const textOf = (s: { start: number; end: number }) => input.slice(s.start, s.end);

  let priority: Priority | null = null;
  let topic: QuickAddParse['topic'] = null;
  let draft: RuleDraft | null = null;
  let rulePart: PhrasePart | null = null;
  /** reminder phrases: their date part is read by chrono afterwards */
  const reminderSpans: Array<{ start: number; end: number; kind: 'when' | 'before' | 'due'; minutes?: number; used?: boolean }> = [];
  /** "tmr", "tod": short forms chrono does not know */
  let dateOverride: { start: number; end: number; text: string; date: LocalDate } | null = null;

  for (let i = 0; i < tokens.length; ) {
    const w = tokens[i]!.w;
    // priority
    const p = PRIORITIES[w];
    if (p) {
      priority = p;
      const s = span(i, 1);
      parts.push({ kind: 'priority', text: textOf(s), label: PRIORITY_LABEL[p], ...s });
      take(s.start, s.end);
      i++;
      continue;
    }
    if (/^![a-z]+$/.test(w) && w.length > 2) {
      const s = span(i, 1);
      notUnderstood.push({ text: textOf(s), ...s, hint: 'priorities are !high, !normal and !someday' });
      i++;
      continue;
    }
    // topic: "#home", "#work projects" (the longest topic title the following words spell)
    if (w.startsWith('#') && w.length > 1 && !/^#\d+$/.test(w)) {
      const name = tokens[i]!.w.slice(1);
      if (!ctx.topics) {
        const s = span(i, 1);
        topic = { name: textOf(s).slice(1), id: null };
        parts.push({ kind: 'topic', text: textOf(s), label: `Topic: ${topic.name}`, ...s });
        take(s.start, s.end);
        i++;
        continue;
      }
      let best: { topic: PhraseTopic; n: number } | null = null;
      for (let n = 1; n <= 4 && i + n <= tokens.length; n++) {
        const typed = [name, ...tokens.slice(i + 1, i + n).map((x) => x.w)].join(' ');
        const exact = ctx.topics.find((x) => x.title.toLowerCase() === typed);
        const prefix = n === 1 ? ctx.topics.find((x) => x.title.toLowerCase().startsWith(typed)) : undefined;
        if (exact) best = { topic: exact, n };
        else if (prefix && !best) best = { topic: prefix, n };
      }
      const s = span(i, best?.n ?? 1);
      if (best) {
        topic = { name: best.topic.title, id: best.topic.id };
        parts.push({ kind: 'topic', text: textOf(s), label: `Topic: ${best.topic.title}`, ...s });
        take(s.start, s.end);
        i += best.n;
      } else {
        notUnderstood.push({ text: textOf(s), ...s, hint: `there is no topic "${textOf(s).slice(1)}"; it stays in the title` });
        i++;
      }
      continue;
    }
    // reminders
    if ((w === 'remind' && tokens[i + 1]?.w === 'me') || w === 'reminder') {
      const n = w === 'remind' ? 2 : 1;
      const after = tokens[i + n];
      // "remind me to call mom …": a reminder when it is due
      if (after?.w === 'to') {
        const s = span(i, n + 1);
        reminderSpans.push({ ...s, kind: 'due' });
        take(s.start, s.end);
        i += n + 1;
        continue;
      }
      // "remind me 30 min before", "remind me an hour before", "remind me the day before"
      const c = count(after?.w) ?? (after?.w === 'the' ? 1 : undefined);
      const unit = tokens[i + n + 1]?.w;
      if (c !== undefined && unit && DURATION_MINUTES[unit] !== undefined && tokens[i + n + 2]?.w === 'before') {
        const s = span(i, n + 3);
        reminderSpans.push({ ...s, kind: 'before', minutes: c * DURATION_MINUTES[unit] });
        take(s.start, s.end);
        i += n + 3;
        continue;
      }
      const compact = /^(\d{1,3})(m|min|h|hr|d)$/.exec(after?.w ?? '');
      if (compact && tokens[i + n + 1]?.w === 'before') {
        const s = span(i, n + 2);
        reminderSpans.push({ ...s, kind: 'before', minutes: Number(compact[1]) * DURATION_MINUTES[compact[2]!]! });
        take(s.start, s.end);
        i += n + 2;
        continue;
      }
      // "remind me in 2 hours", "remind me at 5pm", "remind me tomorrow at 9": chrono reads the rest
      const s = span(i, n);
      reminderSpans.push({ ...s, kind: 'when' });
      take(s.start, s.end);
      i += n;
      continue;
    }
    // recurrence
    const m: RuleMatch | null = draft ? null : ruleAt(tokens, i);
    if (m) {
      const s = span(i, Math.max(1, m.n));
      const found: RuleDraft | null = m.draft;
      if (found) {
        draft = found;
        let end = s.end;
        const after = afterCompletion(tokens, i + m.n);
        if (after) {
          found.rule.fixed = false;
          end = tokens[i + m.n + after - 1]!.end;
          m.n += after;
        }
        rulePart = { kind: 'recurrence', text: input.slice(s.start, end), label: '', start: s.start, end };
        take(s.start, end);
      } else {
        notUnderstood.push({ text: textOf(s), ...s, hint: m.hint ?? 'not understood; it stays in the title' });
      }
      i += Math.max(1, m.n);
      continue;
    }
    if (w === 'until' || w === 'ending') {
      const s = span(i, Math.min(tokens.length - i, 3));
      notUnderstood.push({ text: textOf(s), ...s, hint: 'a repetition cannot end on a date yet; delete the task when it is done' });
      hidden.push([s.start, s.end]); // so chrono does not read "until friday" as the due date
      i += 3;
      continue;
    }
    // "on the 1st", "by the 15th": the next such day of a month (chrono needs a month name)
    if ((w === 'on' || w === 'by' || w === 'due') && !dateOverride) {
      const md = monthDayAt(tokens, i + 1);
      if (md && md.n === 2) {
        const s = span(i, 1 + md.n);
        const d = nextMonthDay(ctx.today, md.day);
        if (d) {
          dateOverride = { start: s.start, end: s.end, text: textOf(s), date: d };
          take(s.start, s.end);
          i += 1 + md.n;
          continue;
        }
      }
    }
    // the old short forms chrono does not know
    if (w === 'tod' || w === 'tmr' || w === 'tmrw' || w === '@tod' || w === '@tmr') {
      const s = span(i, 1);
      const d = w.endsWith('tod') ? ctx.today : addDays(ctx.today, 1);
      dateOverride = { start: s.start, end: s.end, text: textOf(s), date: d };
      take(s.start, s.end);
      i++;
      continue;
    }
    i++;
  }

  // chrono reads what is left (taken spans blanked, so offsets stay; "@" is the old date marker)
  let blank = input;
  for (const [a, b] of [...taken, ...hidden]) blank = blank.slice(0, a) + ' '.repeat(b - a) + blank.slice(b);
  blank = blank.replace(/@(?=\S)/g, ' ');
  const { hits, rejected } = dateHits(blank, input, ctx);
  notUnderstood.push(...rejected);

  let dueDate: LocalDate | null = dateOverride?.date ?? null;
  let dueTime: string | null = null;
  /** the due date so far came from a time alone ("at 9am" → today or tomorrow) */
  let dateFromTime = false;
  const reminders: Reminder[] = [];
  if (dateOverride) parts.push({ kind: 'date', text: dateOverride.text, label: `Due ${formatDueLabel(dateOverride.date, ctx.today)}`, start: dateOverride.start, end: dateOverride.end });
  const now = ctx.now ?? new Date();
  for (const h of hits) {
    // a hit right after "remind me" is the reminder's time
    const rem = reminderSpans.find((r) => r.kind === 'when' && !r.used && r.end <= h.start && /^\s*$/.test(blank.slice(r.end, h.start)));
    if (rem) {
      rem.used = true;
      const at = h.relative ? new Date(now.getTime() + (h.wall - wallClockNow(ctx).getTime())) : instantOf(h.wall, ctx.timeZone);
      if (reminders.length < MAX_REMINDERS) reminders.push({ at: at.toISOString() });
      const wall = new Date(h.wall);
      parts.push({ kind: 'reminder', text: input.slice(rem.start, h.end), label: `Reminder ${formatDueLabel(h.date, ctx.today)} at ${pad2(wall.getUTCHours())}:${pad2(wall.getUTCMinutes())}`, start: rem.start, end: h.end });
      take(h.start, h.end);
      continue;
    }
    let used = false;
    if (dueDate === null) {
      dueDate = h.date;
      dueTime = h.time;
      dateFromTime = !h.hasDate;
      used = true;
    } else if (!h.hasDate && h.time && dueTime === null) {
      dueTime = h.time; // "Dec 12 dentist at 9am"
      used = true;
    } else if (h.hasDate && !h.time && dateFromTime) {
      dueDate = h.date; // "at 9am … on friday"
      dateFromTime = false;
      used = true;
    }
    if (!used) {
      notUnderstood.push({ text: h.text, start: h.start, end: h.end, hint: 'a second date; a task has one due date' });
      continue;
    }
    const kind: PhrasePartKind = h.hasDate ? 'date' : 'time';
    parts.push({ kind, text: h.text, label: kind === 'time' ? `At ${h.time}` : `Due ${formatDueLabel(h.date, ctx.today)}${h.time ? ` at ${h.time}` : ''}`, start: h.start, end: h.end });
    take(h.start, h.end);
  }
  for (const r of reminderSpans) {
    if (r.kind === 'when' && !r.used) {
      notUnderstood.push({ text: input.slice(r.start, r.end), start: r.start, end: r.end, hint: 'remind you when? e.g. "remind me in 2 hours" or "remind me at 5pm"' });
      taken.splice(taken.findIndex(([a]) => a === r.start), 1);
    }
  }

  // recurrence: the rule's first date on or after the date given (or today)
  let recurrence: RecurrenceRule | null = null;
  if (draft && rulePart) {
    const start = scheduleStart(draft, dueDate ?? ctx.today);
    recurrence = start.rule;
    dueDate = start.dueDate;
    parts.push({ ...rulePart, label: describeRecurrence(recurrence, dueDate) });
  }

  // "before" reminders and "remind me to" count back from the due date (at its time, 09:00 without one)
  for (const r of reminderSpans) {
    if (r.kind === 'when') continue;
    const text = input.slice(r.start, r.end);
    if (dueDate === null) {
      notUnderstood.push({ text, start: r.start, end: r.end, hint: 'a reminder before the task is due needs a due date, e.g. "tomorrow at 9am"' });
      taken.splice(taken.findIndex(([a]) => a === r.start), 1);
      continue;
    }
    const minutes = r.kind === 'before' ? Math.min(r.minutes!, MAX_BEFORE_DUE_MINUTES) : 0;
    if (reminders.length < MAX_REMINDERS) reminders.push({ beforeDueMinutes: minutes });
    parts.push({ kind: 'reminder', text, label: (minutes === 0 ? 'Reminder when due' : `Reminder ${describeMinutes(minutes)} before`) + (dueTime === null ? ' 09:00' : ''), start: r.start, end: r.end });
  }

  // the title: what is left, without connectors left dangling before a taken phrase
  const title = titleWithout(input, taken);
  parts.sort((a, b) => a.start - b.start);
  notUnderstood.sort((a, b) => a.start - b.start);
  return { title, dueDate, dueTime: dueDate ? dueTime : null, recurrence, topic, priority, reminders, notUnderstood, parts };

}

function describeMinutes(m: number): string {
  if (m % 10080 === 0) return m === 10080 ? '1 week' : `${m / 10080} weeks`;
  if (m % 1440 === 0) return m === 1440 ? '1 day' : `${m / 1440} days`;
  if (m % 60 === 0) return m === 60 ? '1 hour' : `${m / 60} hours`;
  return `${m} min`;
}

function titleWithout(input: string, taken: Array<[number, number]>): string {
  const spans = [...taken].sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [a, b] of spans) {
    if (a < at) {
      at = Math.max(at, b);
      continue;
    }
    let kept = input.slice(at, a);
    // "Pay rent by friday" → "Pay rent": a connector right before the phrase goes with it
    const m = /(^|\s)(\S+)\s*$/.exec(kept);
    if (m && CONNECTORS.has(m[2]!.toLowerCase())) kept = kept.slice(0, m.index + m[1]!.length);
    out += `${kept} `;
    at = b;
  }
  out += input.slice(at);
  return out.replace(/\s+/g, ' ').replace(/\s+([,.;:?])(?=\s|$)/g, '$1').replace(/^[\s,;:]+|[\s,;:-]+$/g, '');
}

/**
 * A date/recurrence phrase alone ("every mon", "Dec 12", "every! 3 days", "tomorrow 18:30"), as in
 * Todoist's DATE column: `ok` only when every word of it was understood.
 */
export interface WhenParse {
  ok: boolean;
  dueDate: LocalDate | null;
  dueTime: string | null;
  recurrence: RecurrenceRule | null;
  /** the words that were not understood (empty when ok) */
  notUnderstood: string[];
}

export function parseWhen(text: string, ctx: PhraseContext): WhenParse {
  const r = parseQuickAdd(text, { ...ctx, topics: [] });
  const leftover = r.title;
  const wrongKind = r.parts.filter((p) => p.kind !== 'date' && p.kind !== 'time' && p.kind !== 'recurrence');
  const notUnderstood = [...r.notUnderstood.map((n) => n.text), ...(leftover ? [leftover] : []), ...wrongKind.map((p) => p.text)];
  return { ok: notUnderstood.length === 0, dueDate: r.dueDate, dueTime: r.dueTime, recurrence: r.recurrence, notUnderstood };
}
