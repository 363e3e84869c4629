import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { buildCalendar, type FeedTask } from './ical.ts';
import { startSchedule, upcoming, type RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';

const rule = (r: Partial<RecurrenceRule> & Pick<RecurrenceRule, 'type'>): RecurrenceRule => ({ interval: 1, weekdays: [], weekOfMonth: null, fixed: true, ...r });

function task(id: string, date: string, recurrence: FeedTask['recurrence'], extra: Partial<FeedTask> = {}): FeedTask {
  return { id, title: `Task ${id}`, notes: null, priority: 'NORMAL', date, recurrence, parentId: null, updatedAt: new Date('2026-11-01T10:00:00Z'), ...extra };
}

/** Expand the first `count` start dates of one VEVENT with ical.js. */
function expand(ics: string, uid: string, count: number): string[] {
  const comp = new ICAL.Component(ICAL.parse(ics));
  const vevent = comp.getAllSubcomponents('vevent').find((v) => v.getFirstPropertyValue('uid') === uid);
  if (!vevent) throw new Error(`no event ${uid}`);
  const event = new ICAL.Event(vevent);
  const it = event.iterator();
  const out: string[] = [];
  for (let next = it.next(); next && out.length < count; next = it.next()) out.push(next.toString().slice(0, 10));
  return out;
}

// Anchors and first dates picked for their edges: month ends, leap days, year ends, odd weeks.
const cases: { name: string; rule: RecurrenceRule; anchor: string; first: string }[] = [
  { name: 'INTERVAL every day', rule: rule({ type: 'INTERVAL' }), anchor: '2024-02-27', first: '2024-02-27' },
  { name: 'INTERVAL every 10 days', rule: rule({ type: 'INTERVAL', interval: 10 }), anchor: '2026-12-25', first: '2026-12-25' },
  { name: 'WEEKDAY Mon/Wed/Fri', rule: rule({ type: 'WEEKDAY', weekdays: [4, 0, 2] }), anchor: '2026-11-23', first: '2026-11-23' },
  { name: 'WEEKDAY every 2 weeks on Tue/Sun', rule: rule({ type: 'WEEKDAY', interval: 2, weekdays: [1, 6] }), anchor: '2026-12-29', first: '2026-12-29' },
  { name: 'MONTHLY on the 31st', rule: rule({ type: 'MONTHLY' }), anchor: '2026-01-31', first: '2026-01-31' },
  { name: 'MONTHLY on the 30th', rule: rule({ type: 'MONTHLY' }), anchor: '2027-11-30', first: '2027-11-30' },
  { name: 'MONTHLY on the 29th', rule: rule({ type: 'MONTHLY' }), anchor: '2027-12-29', first: '2027-12-29' },
  { name: 'MONTHLY on the 15th every 3 months', rule: rule({ type: 'MONTHLY', interval: 3 }), anchor: '2026-11-15', first: '2026-11-15' },
  { name: 'MONTHLY on the 31st every 2 months', rule: rule({ type: 'MONTHLY', interval: 2 }), anchor: '2026-08-31', first: '2026-08-31' },
  { name: 'YEARLY on Feb 29', rule: rule({ type: 'YEARLY' }), anchor: '2024-02-29', first: '2024-02-29' },
  { name: 'YEARLY on Dec 31 every 2 years', rule: rule({ type: 'YEARLY', interval: 2 }), anchor: '2026-12-31', first: '2026-12-31' },
  { name: 'NTH_WEEKDAY last Friday', rule: rule({ type: 'NTH_WEEKDAY', weekdays: [4], weekOfMonth: -1 }), anchor: '2026-11-27', first: '2026-11-27' },
  { name: 'NTH_WEEKDAY first Monday every 2 months', rule: rule({ type: 'NTH_WEEKDAY', interval: 2, weekdays: [0], weekOfMonth: 1 }), anchor: '2026-11-02', first: '2026-11-02' },
  { name: 'NTH_WEEKDAY fourth Sunday', rule: rule({ type: 'NTH_WEEKDAY', weekdays: [6], weekOfMonth: 4 }), anchor: '2026-11-22', first: '2026-11-22' },
];

describe('iCal feed', () => {
  for (const c of cases) {
    it(`RRULE of ${c.name} expands (ical.js) to the task's own schedule`, () => {
      const ics = buildCalendar([task('a', c.first, { rule: c.rule, anchor: c.anchor })], { now: new Date(), name: 'Tasks' });
      expect(expand(ics, 'task-a@task-service', 40)).toEqual(upcoming(c.rule, c.anchor, c.first, 40));
    });
  }

  it('a schedule started off-rule (every Monday, created on a Wednesday) expands from its first due date', () => {
    const r = rule({ type: 'WEEKDAY', weekdays: [0] });
    const s = startSchedule(r, '2026-11-25');
    expect(s.nextDueDate).toBe('2026-11-30');
    const ics = buildCalendar([task('w', s.nextDueDate, { rule: r, anchor: s.anchor })], { now: new Date(), name: 'Tasks' });
    expect(expand(ics, 'task-w@task-service', 3)).toEqual(['2026-11-30', '2026-12-07', '2026-12-14']);
  });

  it('writes all-day events with stable UIDs, escaped text and folded lines that round-trip', () => {
    const long = 'Ünïcödé, semicolons; backslash \\ and\nnewline '.repeat(4);
    const ics = buildCalendar([task('x', '2026-12-31', null, { title: long, notes: 'line1\nline2', priority: 'HIGH' })], { now: new Date('2026-11-22T12:00:00Z'), name: 'My tasks' });
    expect(ics.split('\r\n').every((l) => Buffer.byteLength(l) <= 75)).toBe(true);
    const comp = new ICAL.Component(ICAL.parse(ics));
    const [ev] = comp.getAllSubcomponents('vevent');
    const event = new ICAL.Event(ev);
    expect(event.uid).toBe('task-x@task-service');
    expect(event.summary).toBe(long);
    expect(event.description).toBe('line1\nline2');
    expect(event.startDate.isDate).toBe(true);
    expect(event.startDate.toString()).toBe('2026-12-31');
    expect(event.endDate.toString()).toBe('2027-01-01');
    expect(event.isRecurring()).toBe(false);
    expect(ev!.getFirstPropertyValue('priority')).toBe(1);
  });

  it('a subtask names its parent with RELATED-TO;RELTYPE=PARENT (the parent need not be in the feed)', () => {
    const ics = buildCalendar([task('p', '2026-12-01', null), task('s', '2026-12-02', null, { parentId: 'p' }), task('o', '2026-12-03', null, { parentId: 'elsewhere' })], { now: new Date(), name: 'Tasks' });
    const events = new ICAL.Component(ICAL.parse(ics)).getAllSubcomponents('vevent');
    const related = (uid: string) => {
      const prop = events.find((v) => v.getFirstPropertyValue('uid') === uid)!.getFirstProperty('related-to');
      return prop ? [prop.getParameter('reltype'), prop.getFirstValue()] : null;
    };
    expect(related('task-p@task-service')).toBeNull();
    expect(related('task-s@task-service')).toEqual(['PARENT', 'task-p@task-service']);
    expect(related('task-o@task-service')).toEqual(['PARENT', 'task-elsewhere@task-service']);
  });

  it('folds at 75 octets (continuations included) without splitting multi-byte characters', () => {
    const title = '€'.repeat(60) + 'x'.repeat(100) + '😀'.repeat(40);
    const ics = buildCalendar([task('f', '2026-12-31', null, { title })], { now: new Date(), name: 'Tasks' });
    for (const l of ics.split('\r\n')) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(75);
    expect(ics.replaceAll('\r\n ', '')).toContain(`SUMMARY:${title}\r\n`);
  });
});
