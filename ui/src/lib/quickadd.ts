/**
 * Quick-add syntax, so a task can be typed in one line without touching the mouse:
 *   "Pay rent @2026-12-01 !high #home *monthly"
 * - `!high` / `!h` · `!someday` / `!s` · `!normal`: priority
 * - `@today` · `@tomorrow` · `@mon`…`@sun` (next such day) · `@YYYY-MM-DD`: due date
 * - `#word`: topic whose title starts with that word (case-insensitive)
 * - `*daily` · `*weekly` · `*monthly` · `*yearly`: makes it a RECURRING task
 * Tokens that do not match are left in the title.
 */

export interface QuickAddTopic {
  id: string;
  title: string;
}

export interface QuickAddResult {
  title: string;
  priority?: 'HIGH' | 'NORMAL' | 'SOMEDAY';
  dueDate?: string;
  topicId?: string;
  type?: 'RECURRING';
  recurrenceType?: 'INTERVAL' | 'WEEKDAY' | 'MONTHLY' | 'YEARLY';
  recurrenceInterval?: number;
  recurrenceWeekdays?: number[];
}

const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** 0 = Monday … 6 = Sunday, as the API counts weekdays. */
function weekdayOf(date: string): number {
  return (new Date(`${date}T00:00:00Z`).getUTCDay() + 6) % 7;
}

export function parseQuickAdd(input: string, today: string, topics: QuickAddTopic[] = []): QuickAddResult {
  const out: QuickAddResult = { title: '' };
  const rest: string[] = [];
  for (const token of input.trim().split(/\s+/)) {
    const t = token.toLowerCase();
    if (t === '!high' || t === '!h' || t === '!!') out.priority = 'HIGH';
    else if (t === '!someday' || t === '!s') out.priority = 'SOMEDAY';
    else if (t === '!normal' || t === '!n') out.priority = 'NORMAL';
    else if (t === '@today') out.dueDate = today;
    else if (t === '@tomorrow') out.dueDate = addDays(today, 1);
    else if (/^@\d{4}-\d{2}-\d{2}$/.test(t)) out.dueDate = t.slice(1);
    else if (t.startsWith('@') && WEEKDAYS.includes(t.slice(1, 4)) && t.length <= 10) {
      const target = WEEKDAYS.indexOf(t.slice(1, 4));
      const delta = (target - weekdayOf(today) + 7) % 7 || 7;
      out.dueDate = addDays(today, delta);
    } else if (t.startsWith('#') && t.length > 1) {
      const name = t.slice(1);
      const topic = topics.find((x) => x.title.toLowerCase() === name) ?? topics.find((x) => x.title.toLowerCase().startsWith(name));
      if (topic) out.topicId = topic.id;
      else rest.push(token);
    } else if (t === '*daily') Object.assign(out, { type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1 });
    else if (t === '*weekly') Object.assign(out, { type: 'RECURRING', recurrenceType: 'WEEKDAY', recurrenceInterval: 1, recurrenceWeekdays: [weekdayOf(out.dueDate ?? today)] });
    else if (t === '*monthly') Object.assign(out, { type: 'RECURRING', recurrenceType: 'MONTHLY', recurrenceInterval: 1 });
    else if (t === '*yearly') Object.assign(out, { type: 'RECURRING', recurrenceType: 'YEARLY', recurrenceInterval: 1 });
    else rest.push(token);
  }
  // "*weekly @fri": the weekday follows the due date, whichever order they were typed in.
  if (out.recurrenceType === 'WEEKDAY' && out.dueDate) out.recurrenceWeekdays = [weekdayOf(out.dueDate)];
  out.title = rest.join(' ');
  return out;
}
