/**
 * Quick-add syntax, so a task can be typed in one line without touching the mouse:
 *   "Pay rent every month !high #home"   "Call the bank tomorrow 9am"   "Standup every 2nd tue"
 * - `!high` / `!h` · `!someday` / `!s` · `!normal`: priority
 * - dates: `today`, `tomorrow`, `next fri`, `on friday`, `friday`, `@fri`, `@2026-12-01`, `in 3 days`;
 *   a time right after a date (`9am`, `14:30`) is highlighted with it but stays in the title (tasks
 *   carry dates, not times)
 * - `#word`: topic whose title starts with that word (case-insensitive)
 * - recurrence (makes it RECURRING): `every day|week|month|year`, `every 3 days`, `every mon`,
 *   `every other fri`, `every 2nd tue` (the 2nd Tuesday of each month), `every last fri`, `*daily` …
 * Words that do not match are left in the title. `parts` lists what was recognised, for highlighting.
 */
import { addDays, formatDate } from './dates.ts';

export interface QuickAddTopic {
  id: string;
  title: string;
}

export type QuickAddPartKind = 'date' | 'time' | 'priority' | 'topic' | 'recurrence';

export interface QuickAddPart {
  kind: QuickAddPartKind;
  /** the words as typed */
  text: string;
  /** what they mean, for the preview ("High priority", "Topic: Home") */
  label: string;
  /** where they are in the typed line: [start, end) character offsets, for highlighting in place */
  start: number;
  end: number;
}

export interface QuickAddResult {
  title: string;
  priority?: 'HIGH' | 'NORMAL' | 'SOMEDAY';
  dueDate?: string;
  topicId?: string;
  type?: 'RECURRING';
  recurrenceType?: 'INTERVAL' | 'WEEKDAY' | 'MONTHLY' | 'YEARLY' | 'NTH_WEEKDAY';
  recurrenceInterval?: number;
  recurrenceWeekdays?: number[];
  recurrenceWeekOfMonth?: number;
}

const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const WEEKDAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const ORDINALS: Record<string, number> = { '1st': 1, first: 1, '2nd': 2, second: 2, '3rd': 3, third: 3, '4th': 4, fourth: 4, last: -1 };
const UNITS: Record<string, 'day' | 'week' | 'month' | 'year'> = { day: 'day', days: 'day', week: 'week', weeks: 'week', month: 'month', months: 'month', year: 'year', years: 'year' };

/** 0 = Monday … 6 = Sunday, as the API counts weekdays. */
function weekdayOf(date: string): number {
  return (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7;
}

/** `fri`, `friday`, `Fri` → 4; anything else → -1. Full names or the three-letter form only. */
function weekday(word: string | undefined): number {
  if (!word) return -1;
  const w = word.toLowerCase();
  const i = WEEKDAYS.indexOf(w.slice(0, 3));
  return i >= 0 && (w.length === 3 || WEEKDAY_NAMES[i]!.toLowerCase() === w) ? i : -1;
}

/** The next such weekday after today (never today itself). */
function nextWeekday(today: string, day: number): string {
  return addDays(today, (day - weekdayOf(today) + 7) % 7 || 7);
}

const TIME_RE = /^(\d{1,2})(?::(\d{2}))?(am|pm)$|^(\d{1,2}):(\d{2})$/i;


interface Match {
  /** how many words the phrase takes */
  n: number;
  kind: QuickAddPartKind;
  label: string;
  apply: (out: QuickAddResult) => void;
}

function recurrence(out: QuickAddResult, type: NonNullable<QuickAddResult['recurrenceType']>, interval: number, weekdays?: number[], weekOfMonth?: number): void {
  out.type = 'RECURRING';
  out.recurrenceType = type;
  out.recurrenceInterval = interval;
  if (weekdays) out.recurrenceWeekdays = weekdays;
  else delete out.recurrenceWeekdays;
  if (weekOfMonth !== undefined) out.recurrenceWeekOfMonth = weekOfMonth;
  else delete out.recurrenceWeekOfMonth;
}

/** The longest phrase that starts at word `i`, or null. */
function matchAt(words: string[], i: number, today: string, topics: QuickAddTopic[]): Match | null {
  const w = words[i]!.toLowerCase();
  const w1 = words[i + 1]?.toLowerCase();
  const w2 = words[i + 2]?.toLowerCase();
  const date = (n: number, d: string, label = formatDate(d)): Match => ({ n, kind: 'date', label: `Due ${label}`, apply: (o) => (o.dueDate = d) });

  if (w === '!high' || w === '!h' || w === '!!') return { n: 1, kind: 'priority', label: 'High priority', apply: (o) => (o.priority = 'HIGH') };
  if (w === '!someday' || w === '!s') return { n: 1, kind: 'priority', label: 'Someday', apply: (o) => (o.priority = 'SOMEDAY') };
  if (w === '!normal' || w === '!n') return { n: 1, kind: 'priority', label: 'Normal priority', apply: (o) => (o.priority = 'NORMAL') };

  const bare = w.startsWith('@') ? w.slice(1) : w;
  if (bare === 'today' || bare === 'tod') return date(1, today, 'today');
  if (bare === 'tomorrow' || bare === 'tmr' || bare === 'tom') return date(1, addDays(today, 1), 'tomorrow');
  if (/^@\d{4}-\d{2}-\d{2}$/.test(w) || /^\d{4}-\d{2}-\d{2}$/.test(w)) return date(1, bare);
  if ((w === 'next' || w === 'on') && weekday(w1) >= 0) return date(2, nextWeekday(today, weekday(w1)));
  if (w === 'next' && w1 === 'week') return date(2, addDays(today, 7));
  // A bare weekday must be spelled out ("friday"); "@fri" and "fri" after next/on are the short forms.
  if ((w.startsWith('@') && weekday(bare) >= 0) || (weekday(w) >= 0 && w.length > 3)) return date(1, nextWeekday(today, weekday(bare)));
  if (w === 'in' && w1 && /^\d{1,3}$/.test(w1) && (w2 === 'days' || w2 === 'day' || w2 === 'weeks' || w2 === 'week')) {
    const days = Number(w1) * (w2.startsWith('week') ? 7 : 1);
    return date(3, addDays(today, days));
  }

  if (w.startsWith('#') && w.length > 1) {
    const name = w.slice(1);
    const topic = topics.find((x) => x.title.toLowerCase() === name) ?? topics.find((x) => x.title.toLowerCase().startsWith(name));
    return topic ? { n: 1, kind: 'topic', label: `Topic: ${topic.title}`, apply: (o) => (o.topicId = topic.id) } : null;
  }

  const star: Record<string, 'day' | 'week' | 'month' | 'year'> = { '*daily': 'day', '*weekly': 'week', '*monthly': 'month', '*yearly': 'year' };
  const every = (n: number, unit: 'day' | 'week' | 'month' | 'year', interval: number): Match => ({
    n,
    kind: 'recurrence',
    label: interval === 1 ? `Every ${unit}` : `Every ${interval} ${unit}s`,
    apply: (o) => {
      if (unit === 'day') recurrence(o, 'INTERVAL', interval);
      else if (unit === 'week') recurrence(o, 'WEEKDAY', interval, [weekdayOf(o.dueDate ?? today)]);
      else recurrence(o, unit === 'month' ? 'MONTHLY' : 'YEARLY', interval);
    },
  });
  if (star[w]) return every(1, star[w], 1);
  if (w === 'every' && w1) {
    if (UNITS[w1] && !w1.endsWith('s')) return every(2, UNITS[w1], 1);
    if (/^\d{1,3}$/.test(w1) && w2 && UNITS[w2]) return every(3, UNITS[w2], Number(w1));
    if (weekday(w1) >= 0) {
      const d = weekday(w1);
      return { n: 2, kind: 'recurrence', label: `Every ${WEEKDAY_NAMES[d]}`, apply: (o) => recurrence(o, 'WEEKDAY', 1, [d]) };
    }
    if (w1 === 'weekday' || w1 === 'workday') return { n: 2, kind: 'recurrence', label: 'Every weekday', apply: (o) => recurrence(o, 'WEEKDAY', 1, [0, 1, 2, 3, 4]) };
    if (w1 === 'other' && weekday(w2) >= 0) {
      const d = weekday(w2);
      return { n: 3, kind: 'recurrence', label: `Every other ${WEEKDAY_NAMES[d]}`, apply: (o) => recurrence(o, 'WEEKDAY', 2, [d]) };
    }
    if (ORDINALS[w1] !== undefined && weekday(w2) >= 0) {
      const d = weekday(w2);
      const nth = ORDINALS[w1];
      const which = nth === -1 ? 'last' : w1.replace(/^(\d)(st|nd|rd|th)$/, '$1$2');
      return { n: 3, kind: 'recurrence', label: `Every ${which} ${WEEKDAY_NAMES[d]} of the month`, apply: (o) => recurrence(o, 'NTH_WEEKDAY', 1, [d], nth) };
    }
  }
  return null;
}

export interface ParsedQuickAdd extends QuickAddResult {
  parts: QuickAddPart[];
}

export function parseQuickAddWithParts(input: string, today: string, topics: QuickAddTopic[] = []): ParsedQuickAdd {
  const out: QuickAddResult = { title: '' };
  const parts: QuickAddPart[] = [];
  const rest: string[] = [];
  const found = [...input.matchAll(/\S+/g)];
  const words = found.map((m) => m[0]);
  const span = (from: number, n: number) => ({ start: found[from]!.index, end: found[from + n - 1]!.index + found[from + n - 1]![0].length });
  const apply: Match['apply'][] = [];
  for (let i = 0; i < words.length; ) {
    const m = matchAt(words, i, today, topics);
    if (!m) {
      rest.push(words[i]!);
      i++;
      continue;
    }
    parts.push({ kind: m.kind, text: words.slice(i, i + m.n).join(' '), label: m.label, ...span(i, m.n) });
    // Recurrence is applied last, so "every week … friday" follows the due date in either order.
    if (m.kind === 'recurrence') apply.push(m.apply);
    else m.apply(out);
    i += m.n;
    // A time right after a date belongs to it in the preview; it stays in the title.
    if (m.kind === 'date' && words[i] && TIME_RE.test(words[i]!)) {
      parts.push({ kind: 'time', text: words[i]!, label: `at ${words[i]} (kept in the title)`, ...span(i, 1) });
      rest.push(words[i]!);
      i++;
    }
  }
  for (const a of apply) a(out);
  out.title = rest.join(' ');
  return { ...out, parts };
}

/** What the API gets: the task fields without the preview parts. */
export function parseQuickAdd(input: string, today: string, topics: QuickAddTopic[] = []): QuickAddResult {
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { parts, ...result } = parseQuickAddWithParts(input, today, topics);
  return result;
}
