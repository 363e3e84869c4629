import ICAL from 'ical.js';
import { describe, expect, it } from 'vitest';
import { upcoming, type RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';
import { reminderInstants, type Reminder } from '@tasksvc/proto/calendar/reminders.ts';
import { keepCategories, parseCalendarObject, sameReminders, parseVtodos, priorityOf, taskCalendar, taskToVtodo, vtodoCalendar, type VtodoSource, type VtodoTask } from './vtodo.ts';

const rule = (r: Partial<RecurrenceRule> & Pick<RecurrenceRule, 'type'>): RecurrenceRule => ({ interval: 1, weekdays: [], weekOfMonth: null, fixed: true, ...r });

function task(extra: Partial<VtodoSource> = {}): VtodoSource {
  return {
    id: '6f0a3c1e-8d6b-4f43-9a55-2c1d7e0b9a11',
    title: 'Water the plants',
    notes: null,
    type: 'ONE_TIME',
    priority: 'NORMAL',
    dueDate: null,
    nextDueDate: null,
    recurrenceType: null,
    recurrenceInterval: null,
    recurrenceWeekdays: null,
    recurrenceWeekOfMonth: null,
    recurrenceFixed: false,
    completedAt: null,
    createdAt: new Date('2026-11-01T10:00:00Z'),
    updatedAt: new Date('2026-11-02T11:30:00Z'),
    ...extra,
  };
}

function recurring(r: RecurrenceRule, anchor: string, next: string, extra: Partial<VtodoSource> = {}): VtodoSource {
  return task({
    type: 'RECURRING',
    dueDate: anchor,
    nextDueDate: next,
    recurrenceAnchor: anchor,
    recurrenceType: r.type,
    recurrenceInterval: r.interval,
    recurrenceWeekdays: r.weekdays,
    recurrenceWeekOfMonth: r.weekOfMonth,
    recurrenceFixed: r.fixed,
    ...extra,
  });
}

const zone = { timezone: 'Europe/Berlin' };
const read = (ics: string, tz = zone): VtodoTask => {
  const r = parseCalendarObject(ics, tz);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.task;
};
const vcal = (...lines: string[]) => ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN', ...lines, 'END:VCALENDAR', ''].join('\r\n');
const vtodo = (...lines: string[]) => vcal('BEGIN:VTODO', 'UID:client-1', 'DTSTAMP:20261101T000000Z', 'SUMMARY:From a client', ...lines, 'END:VTODO');

/** The first `count` dates ical.js expands the VTODO's recurrence to (from DTSTART). */
function expand(ics: string, count: number): string[] {
  const v = new ICAL.Component(ICAL.parse(ics)).getFirstSubcomponent('vtodo')!;
  const start = v.getFirstPropertyValue('dtstart') as ICAL.Time;
  const it = new ICAL.RecurExpansion({ component: v, dtstart: start });
  const out: string[] = [];
  for (let next = it.next(); next && out.length < count; next = it.next()) out.push(next.toString().slice(0, 10));
  return out;
}

// schedule, anchor and the current occurrence: month ends, leap days, odd weeks, clamped dates
const schedules: { name: string; rule: RecurrenceRule; anchor: string; next: string }[] = [
  { name: 'every day', rule: rule({ type: 'INTERVAL' }), anchor: '2024-02-27', next: '2024-02-27' },
  { name: 'every 10 days, rolling', rule: rule({ type: 'INTERVAL', interval: 10, fixed: false }), anchor: '2026-12-25', next: '2027-01-04' },
  { name: 'Mon/Wed/Fri', rule: rule({ type: 'WEEKDAY', weekdays: [4, 0, 2] }), anchor: '2026-11-23', next: '2026-11-25' },
  { name: 'every 2 weeks on Tue/Sun', rule: rule({ type: 'WEEKDAY', interval: 2, weekdays: [1, 6] }), anchor: '2026-12-29', next: '2027-01-03' },
  { name: 'monthly on the 31st, now clamped to Feb 28', rule: rule({ type: 'MONTHLY' }), anchor: '2026-01-31', next: '2026-02-28' },
  { name: 'monthly on the 30th', rule: rule({ type: 'MONTHLY' }), anchor: '2027-11-30', next: '2027-11-30' },
  { name: 'monthly on the 29th, now clamped', rule: rule({ type: 'MONTHLY' }), anchor: '2027-12-29', next: '2028-02-29' },
  { name: 'every 3 months on the 15th', rule: rule({ type: 'MONTHLY', interval: 3 }), anchor: '2026-11-15', next: '2027-02-15' },
  { name: 'every 2 months on the 31st', rule: rule({ type: 'MONTHLY', interval: 2 }), anchor: '2026-08-31', next: '2026-10-31' },
  { name: 'yearly on Feb 29, now clamped', rule: rule({ type: 'YEARLY' }), anchor: '2024-02-29', next: '2025-02-28' },
  { name: 'every 2 years on Dec 31', rule: rule({ type: 'YEARLY', interval: 2 }), anchor: '2026-12-31', next: '2028-12-31' },
  { name: 'last Friday', rule: rule({ type: 'NTH_WEEKDAY', weekdays: [4], weekOfMonth: -1 }), anchor: '2026-11-27', next: '2026-12-25' },
  { name: 'first Monday every 2 months', rule: rule({ type: 'NTH_WEEKDAY', interval: 2, weekdays: [0], weekOfMonth: 1 }), anchor: '2026-11-02', next: '2027-01-04' },
];

describe('task → VTODO → task', () => {
  for (const s of schedules) {
    it(`a repeating task "${s.name}" reads back to its schedule, and ical.js expands its RRULE to the same dates`, () => {
      const ics = taskCalendar(recurring(s.rule, s.anchor, s.next), zone);
      const back = read(ics);
      expect(back.type).toBe('RECURRING');
      expect(back.dueDate).toBe(s.next);
      expect(back.schedule!.nextDueDate).toBe(s.next);
      expect(back.schedule!.rule).toEqual({ ...s.rule, weekdays: [...s.rule.weekdays].sort() });
      expect(upcoming(back.schedule!.rule, back.schedule!.anchor, s.next, 30)).toEqual(upcoming(s.rule, s.anchor, s.next, 30));
      expect(expand(ics, 30)).toEqual(upcoming(s.rule, s.anchor, s.next, 30));
    });
  }

  it('writes the fields a client reads, escaped and folded, and reads them back', () => {
    const title = 'Ünïcödé, semicolons; backslash \\ and a long title '.repeat(3).trim().slice(0, 200);
    const ics = taskCalendar(task({ title, notes: 'line1\nline2, with; specials', priority: 'HIGH', dueDate: '2026-12-31', estimatedMinutes: 25, energyLevel: 'LOW', coinValue: 3 }), {
      ...zone,
      topicTitle: 'Home, garden',
      parentUid: 'parent-uid@example',
    });
    for (const l of ics.split('\r\n')) expect(Buffer.byteLength(l)).toBeLessThanOrEqual(75);
    const v = new ICAL.Component(ICAL.parse(ics)).getFirstSubcomponent('vtodo')!;
    expect(v.getFirstPropertyValue('uid')).toBe('task-6f0a3c1e-8d6b-4f43-9a55-2c1d7e0b9a11@task-service');
    expect(v.getFirstProperty('due')!.type).toBe('date');
    expect(v.getFirstPropertyValue('priority')).toBe(1);
    expect(v.getFirstPropertyValue('status')).toBe('NEEDS-ACTION');
    expect(v.getFirstProperty('categories')!.getValues()).toEqual(['Home, garden']);
    expect(v.getFirstProperty('related-to')!.getParameter('reltype')).toBe('PARENT');
    expect(v.getFirstPropertyValue('dtstamp')!.toString()).toBe('2026-11-02T11:30:00Z');
    const back = read(ics);
    expect(back).toMatchObject({ title, notes: 'line1\nline2, with; specials', priority: 'HIGH', dueDate: '2026-12-31', dueTime: null, type: 'ONE_TIME', status: 'open', categories: ['Home, garden'], parentUid: 'parent-uid@example' });
    expect(back).toMatchObject({ estimatedMinutes: 25, energyLevel: 'LOW', coinValue: 3, schedule: null });
    expect(back.kept.props).toEqual([]);
  });

  it('the same task always gives the same text (DTSTAMP is the last change, not the time of writing)', () => {
    expect(taskCalendar(task({ dueDate: '2026-12-01' }), zone)).toBe(taskCalendar(task({ dueDate: '2026-12-01' }), zone));
  });

  it('a completed task is STATUS:COMPLETED with COMPLETED in UTC; DAILY_ELIGIBLE and a rolling repeat travel as X- properties', () => {
    const done = read(taskCalendar(task({ completedAt: new Date('2026-11-05T08:09:10.123Z'), type: 'DAILY_ELIGIBLE' }), zone));
    expect(done).toMatchObject({ status: 'completed', type: 'DAILY_ELIGIBLE' });
    expect(done.completedAt!.toISOString()).toBe('2026-11-05T08:09:10.000Z');
    const rolling = read(taskCalendar(recurring(rule({ type: 'INTERVAL', interval: 3, fixed: false }), '2026-11-01', '2026-11-04'), zone));
    expect(rolling.schedule!.rule.fixed).toBe(false);
  });

  it('a due time is written in the user zone with its VTIMEZONE and reads back, in another zone too', () => {
    const ics = taskCalendar(task({ dueDate: '2026-07-01', dueTime: '23:30' }), zone);
    expect(ics).toContain('DUE;TZID=Europe/Berlin:20260701T233000');
    expect(ics).toContain('BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin');
    expect(read(ics)).toMatchObject({ dueDate: '2026-07-01', dueTime: '23:30' });
    expect(read(ics, { timezone: 'UTC' })).toMatchObject({ dueDate: '2026-07-01', dueTime: '21:30' });
    expect(read(ics, { timezone: 'Asia/Tokyo' })).toMatchObject({ dueDate: '2026-07-02', dueTime: '06:30' });
    const utc = taskCalendar(task({ dueDate: '2026-07-01', dueTime: '08:00' }), { timezone: 'UTC' });
    expect(utc).toContain('DUE:20260701T080000Z');
    expect(utc).not.toContain('VTIMEZONE');
  });
});

describe('VTODO → task (what clients write)', () => {
  it('PRIORITY 1–4 is HIGH, 0/5/none NORMAL, 6–9 SOMEDAY; a client value that still fits is written back as it was', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, null].map((n) => priorityOf(n))).toEqual(['NORMAL', 'HIGH', 'HIGH', 'HIGH', 'HIGH', 'NORMAL', 'SOMEDAY', 'SOMEDAY', 'SOMEDAY', 'SOMEDAY', 'NORMAL']);
    const two = read(vtodo('PRIORITY:2'));
    expect(two.priority).toBe('HIGH');
    const again = taskToVtodo(task({ priority: 'HIGH' }), { ...zone, kept: two.kept });
    expect(again.getFirstPropertyValue('priority')).toBe(2);
    const changed = taskToVtodo(task({ priority: 'SOMEDAY' }), { ...zone, kept: two.kept });
    expect(changed.getFirstPropertyValue('priority')).toBe(9);
    const none = read(vtodo());
    expect(taskToVtodo(task(), { ...zone, kept: none.kept }).getFirstProperty('priority')).toBeNull();
  });

  it('keeps X- properties, unknown properties and VALARMs and writes them back unchanged', () => {
    const t = read(
      vtodo(
        'X-APPLE-SORT-ORDER:123',
        'X-MOZ-LASTACK;X-PARAM=yes:20261101T100000Z',
        'CLASS:PRIVATE',
        'DTSTART;VALUE=DATE:20261120',
        'SEQUENCE:4',
        'X-ODD:comma\\, kept as written',
        'BEGIN:VALARM',
        'ACTION:DISPLAY',
        'DESCRIPTION:Reminder',
        'TRIGGER;RELATED=END:-PT15M',
        'END:VALARM',
      ),
    );
    const out = vtodoCalendar([taskToVtodo(task(), { ...zone, uid: t.uid, kept: t.kept })]);
    for (const line of ['X-APPLE-SORT-ORDER:123', 'X-MOZ-LASTACK;X-PARAM=yes:20261101T100000Z', 'CLASS:PRIVATE', 'DTSTART;VALUE=DATE:20261120', 'SEQUENCE:4', 'X-ODD:comma\\, kept as written', 'BEGIN:VALARM', 'TRIGGER;RELATED=END:-PT15M']) {
      expect(out).toContain(`${line}\r\n`);
    }
    expect(out).toContain('UID:client-1\r\n');
  });

  it('IN-PROCESS and a percentage stay while the task is open; completing writes COMPLETED and 100', () => {
    const t = read(vtodo('STATUS:IN-PROCESS', 'PERCENT-COMPLETE:40'));
    expect(t.status).toBe('open');
    const open = taskToVtodo(task(), { ...zone, kept: t.kept });
    expect(open.getFirstPropertyValue('status')).toBe('IN-PROCESS');
    expect(open.getFirstPropertyValue('percent-complete')).toBe(40);
    const done = taskToVtodo(task({ completedAt: new Date('2026-11-03T00:00:00Z') }), { ...zone, kept: t.kept });
    expect(done.getFirstPropertyValue('status')).toBe('COMPLETED');
    expect(done.getAllProperties('percent-complete').map((p) => p.getFirstValue())).toEqual([100]);
  });

  it('reads completion from STATUS or COMPLETED alone, and STATUS:CANCELLED', () => {
    expect(read(vtodo('STATUS:COMPLETED', 'COMPLETED:20261101T120000Z'))).toMatchObject({ status: 'completed', completedAt: new Date('2026-11-01T12:00:00Z') });
    expect(read(vtodo('COMPLETED:20261101T120000Z')).status).toBe('completed');
    expect(read(vtodo('STATUS:COMPLETED')).completedAt).toBeNull();
    expect(read(vtodo('STATUS:CANCELLED')).status).toBe('cancelled');
    expect(read(vtodo('STATUS:NEEDS-ACTION')).status).toBe('open');
  });

  it('converts DUE date-times into the user zone: TZID, UTC, floating, and a zone only the calendar defines', () => {
    expect(read(vtodo('DUE;TZID=America/New_York:20261201T200000'))).toMatchObject({ dueDate: '2026-12-02', dueTime: '02:00' });
    expect(read(vtodo('DUE:20261201T233000Z'))).toMatchObject({ dueDate: '2026-12-02', dueTime: '00:30' });
    expect(read(vtodo('DUE:20261201T233000'))).toMatchObject({ dueDate: '2026-12-01', dueTime: '23:30' });
    const custom = vcal(
      'BEGIN:VTIMEZONE',
      'TZID:Custom Standard Time',
      'BEGIN:STANDARD',
      'DTSTART:19700101T000000',
      'TZOFFSETFROM:+0500',
      'TZOFFSETTO:+0500',
      'END:STANDARD',
      'END:VTIMEZONE',
      'BEGIN:VTODO',
      'UID:x',
      'SUMMARY:custom zone',
      'DUE;TZID=Custom Standard Time:20261201T030000',
      'END:VTODO',
    );
    expect(read(custom)).toMatchObject({ dueDate: '2026-11-30', dueTime: '23:00' });
    const unknown = parseCalendarObject(vtodo('DUE;TZID=Nowhere/Special:20261201T100000'), zone);
    expect(unknown.ok && unknown.issues.map((i) => i.property)).toEqual(['DUE']);
  });

  it('reads the usual spellings of rules the model has', () => {
    const sched = (due: string, rrule: string) => read(vtodo(`DUE;VALUE=DATE:${due}`, `RRULE:${rrule}`)).schedule!;
    expect(sched('20261125', 'FREQ=WEEKLY')).toMatchObject({ rule: { type: 'WEEKDAY', weekdays: [2] }, nextDueDate: '2026-11-25' });
    expect(sched('20261125', 'FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR')).toMatchObject({ rule: { type: 'WEEKDAY', weekdays: [0, 1, 2, 3, 4] } });
    expect(sched('20261110', 'FREQ=MONTHLY;BYDAY=TU;BYSETPOS=2')).toMatchObject({ rule: { type: 'NTH_WEEKDAY', weekdays: [1], weekOfMonth: 2 }, nextDueDate: '2026-11-10' });
    expect(sched('20261110', 'FREQ=MONTHLY')).toMatchObject({ rule: { type: 'MONTHLY' }, anchor: '2026-11-10' });
    expect(sched('20260228', 'FREQ=MONTHLY;BYMONTHDAY=-1')).toMatchObject({ anchor: '2026-01-31', nextDueDate: '2026-02-28' });
    expect(sched('20261110', 'FREQ=YEARLY')).toMatchObject({ rule: { type: 'YEARLY' }, anchor: '2026-11-10' });
    // a due date off the rule starts the schedule at the rule's next date, and says so
    const off = parseCalendarObject(vtodo('DUE;VALUE=DATE:20261125', 'RRULE:FREQ=WEEKLY;BYDAY=MO'), zone);
    expect(off.ok && off.task.schedule!.nextDueDate).toBe('2026-11-30');
    expect(off.ok && off.issues.map((i) => i.property)).toEqual(['DUE']);
  });

  it('refuses rules the model cannot hold, with a message a person understands', () => {
    const refused = (rrule: string, due = '20261125') => {
      const r = parseCalendarObject(vtodo(`DUE;VALUE=DATE:${due}`, `RRULE:${rrule}`), zone);
      expect(r.ok, rrule).toBe(false);
      return r.issues.find((i) => i.fatal)!;
    };
    expect(refused('FREQ=DAILY;COUNT=5').message).toMatch(/no end/);
    expect(refused('FREQ=WEEKLY;UNTIL=20270101').message).toMatch(/no end/);
    expect(refused('FREQ=HOURLY').message).toMatch(/hourly/);
    expect(refused('FREQ=DAILY;BYHOUR=9,17').message).toMatch(/BYHOUR/);
    expect(refused('FREQ=MONTHLY;BYMONTHDAY=1,15').message).toMatch(/several days/);
    expect(refused('FREQ=MONTHLY;BYDAY=5MO').message).toMatch(/1st, 2nd, 3rd, 4th or last/);
    expect(refused('FREQ=DAILY;INTERVAL=400').message).toMatch(/1 to 365/);
    expect(refused('FREQ=DAILY;RSCALE=HEBREW').message).toMatch(/RSCALE/);
    expect(refused('FREQ=WEEKLY;INTERVAL=2;BYDAY=SU,MO;WKST=SU').message).toMatch(/Monday/);
    expect(refused('FREQ=DAILY', '20261125\r\nEXDATE;VALUE=DATE:20261126').property).toBe('EXDATE');
    const noDue = parseCalendarObject(vtodo('RRULE:FREQ=DAILY'), zone);
    expect(noDue.ok).toBe(false);
  });

  it('CATEGORIES other than the topic are kept; the topic title is not kept twice', () => {
    const t = read(vtodo('CATEGORIES:Work,urgent', 'CATEGORIES:home'));
    expect(t.categories).toEqual(['Work', 'urgent', 'home']);
    const kept = keepCategories(t.kept, t.categories, 'Work');
    const v = taskToVtodo(task(), { ...zone, topicTitle: 'Office', kept });
    expect(v.getFirstProperty('categories')!.getValues()).toEqual(['Office', 'urgent', 'home']);
  });

  it('RELATED-TO: the parent is read unless the caller keeps it as a property', () => {
    expect(read(vtodo('RELATED-TO;RELTYPE=PARENT:p-1')).parentUid).toBe('p-1');
    expect(read(vtodo('RELATED-TO:p-2')).parentUid).toBe('p-2');
    const sibling = read(vtodo('RELATED-TO;RELTYPE=SIBLING:s-1'));
    expect(sibling.parentUid).toBeNull();
    expect(sibling.kept.props).toHaveLength(1);
    const r = parseCalendarObject(vtodo('RELATED-TO;RELTYPE=PARENT:p-1'), { ...zone, keepRelatedTo: true });
    expect(r.ok && r.task.parentUid).toBeNull();
    expect(r.ok && taskCalendar(task(), { ...zone, kept: r.task.kept })).toContain('RELATED-TO;RELTYPE=PARENT:p-1\r\n');
  });

  it('a calendar object is one task: events, several UIDs and broken text are refused', () => {
    const ev = parseCalendarObject(vcal('BEGIN:VEVENT', 'UID:e', 'DTSTART:20261101T100000Z', 'END:VEVENT'), zone);
    expect(ev).toMatchObject({ ok: false, notTodo: true });
    const two = parseCalendarObject(vcal('BEGIN:VTODO', 'UID:a', 'END:VTODO', 'BEGIN:VTODO', 'UID:b', 'END:VTODO'), zone);
    expect(two.ok).toBe(false);
    const broken = parseCalendarObject('BEGIN:VCALENDAR\r\nthis is not\r\n', zone);
    expect(broken.ok).toBe(false);
    expect(broken.issues[0]!.message).toMatch(/not valid iCalendar/);
    expect(parseCalendarObject(vtodo(), zone)).toMatchObject({ ok: true, task: { title: 'From a client', uid: 'client-1' } });
  });

  it('an occurrence a client wrote as its own component (RECURRENCE-ID) is reported with its state', () => {
    const r = parseCalendarObject(
      vcal('BEGIN:VTODO', 'UID:r', 'SUMMARY:weekly', 'DUE;VALUE=DATE:20261125', 'RRULE:FREQ=WEEKLY', 'END:VTODO', 'BEGIN:VTODO', 'UID:r', 'RECURRENCE-ID;VALUE=DATE:20261125', 'STATUS:COMPLETED', 'COMPLETED:20261125T090000Z', 'END:VTODO'),
      zone,
    );
    expect(r.ok && r.occurrences).toEqual([{ date: '2026-11-25', status: 'completed', completedAt: new Date('2026-11-25T09:00:00Z') }]);
  });

  it('an import file: every VTODO on its own, other components counted', () => {
    const file = vcal('BEGIN:VTODO', 'UID:a', 'SUMMARY:one', 'END:VTODO', 'BEGIN:VTODO', 'UID:b', 'SUMMARY:two', 'RRULE:FREQ=SECONDLY', 'DUE:20261101T100000Z', 'END:VTODO', 'BEGIN:VEVENT', 'UID:c', 'END:VEVENT');
    const r = parseVtodos(file, zone);
    expect(r.ok && r.todos.map((t) => t.ok)).toEqual([true, false]);
    expect(r.ok && r.skipped).toEqual({ VEVENT: 1 });
  });
});

describe('reminders ↔ VALARM', () => {
  const alarms = (ics: string) => new ICAL.Component(ICAL.parse(ics)).getFirstSubcomponent('vtodo')!.getAllSubcomponents('valarm');
  const triggers = (ics: string) => alarms(ics).map((a) => a.getFirstProperty('trigger')!.toICALString());

  /** When a client fires each VALARM: DUE (in the calendar's own VTIMEZONE) plus the TRIGGER, or the absolute TRIGGER. */
  function firesAt(ics: string): string[] {
    const cal = new ICAL.Component(ICAL.parse(ics));
    for (const z of cal.getAllSubcomponents('vtimezone')) ICAL.TimezoneService.register(new ICAL.Timezone(z));
    const due = cal.getFirstSubcomponent('vtodo')!.getFirstPropertyValue('due') as ICAL.Time;
    return alarms(ics)
      .map((a) => {
        const v = a.getFirstPropertyValue('trigger');
        if (v instanceof ICAL.Time) return v.toJSDate().toISOString();
        // a date DUE is the start of that day in the user's zone (what a client does with a floating date)
        const start = due.isDate ? new Date(`${due.toString()}T00:00:00+01:00`) : due.toJSDate();
        return new Date(start.getTime() + (v as ICAL.Duration).toSeconds() * 1000).toISOString();
      })
      .sort();
  }

  it('a due time with reminders writes DISPLAY alarms a client fires when the app does, and reads them back', () => {
    const reminders: Reminder[] = [{ beforeDueMinutes: 30 }, { at: '2026-12-01T07:15:00.000Z' }, { beforeDueMinutes: 0 }];
    const t = task({ dueDate: '2026-12-03', dueTime: '18:45', reminders });
    const ics = taskCalendar(t, zone);
    expect(ics).toContain('DUE;TZID=Europe/Berlin:20261203T184500\r\n');
    expect(ics).toContain('TRIGGER;VALUE=DATE-TIME:20261201T071500Z\r\n');
    expect(triggers(ics)).toEqual(['TRIGGER;RELATED=END:-PT30M', 'TRIGGER;VALUE=DATE-TIME:20261201T071500Z', 'TRIGGER;RELATED=END:PT0S']);
    expect(alarms(ics).map((a) => [a.getFirstPropertyValue('action'), a.getFirstPropertyValue('description')])).toEqual(Array(3).fill(['DISPLAY', 'Water the plants']));
    expect(firesAt(ics)).toEqual(reminderInstants({ ...t, type: 'ONE_TIME', dueTime: '18:45', reminders }, 'Europe/Berlin').map((r) => r.at.toISOString()).sort());
    const back = read(ics);
    expect(back).toMatchObject({ dueDate: '2026-12-03', dueTime: '18:45', reminders });
    expect(back.kept.components).toEqual([]);
  });

  it('on a date without a time the reminders count from 09:00, as in the app (the TRIGGER from the date\'s midnight)', () => {
    const t = task({ dueDate: '2026-12-03', reminders: [{ beforeDueMinutes: 30 }, { beforeDueMinutes: 1440 }, { beforeDueMinutes: 540 }] });
    const ics = taskCalendar(t, zone);
    expect(triggers(ics)).toEqual(['TRIGGER;RELATED=END:PT8H30M', 'TRIGGER;RELATED=END:-PT15H', 'TRIGGER;RELATED=END:PT0S']);
    expect(firesAt(ics)).toEqual(reminderInstants({ ...t, type: 'ONE_TIME', dueTime: null, reminders: t.reminders! }, 'Europe/Berlin').map((r) => r.at.toISOString()).sort());
    expect(read(ics).reminders).toEqual(t.reminders);
  });

  it('a repeating task\'s alarms follow its DUE; a relative reminder without a due date is not written', () => {
    const weekly = recurring(rule({ type: 'WEEKDAY', weekdays: [2] }), '2026-11-25', '2026-12-02', { dueTime: '08:00', reminders: [{ beforeDueMinutes: 15 }] });
    const back = read(taskCalendar(weekly, zone));
    expect(back).toMatchObject({ type: 'RECURRING', dueTime: '08:00', reminders: [{ beforeDueMinutes: 15 }] });
    expect(triggers(taskCalendar(task({ reminders: [{ beforeDueMinutes: 15 }, { at: '2026-12-01T07:15:00Z' }] }), zone))).toEqual(['TRIGGER;VALUE=DATE-TIME:20261201T071500Z']);
  });

  it('what clients write: RELATED=START counts from DTSTART (from DUE without one), DUE in another zone; the rest stays the client\'s own', () => {
    expect(read(vtodo('DUE:20261203T170000Z', 'BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:x', 'TRIGGER:-PT1H', 'END:VALARM')).reminders).toEqual([{ beforeDueMinutes: 60 }]);
    expect(read(vtodo('DUE;TZID=America/New_York:20261203T120000', 'BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;RELATED=END:-P1D', 'END:VALARM'))).toMatchObject({ dueTime: '18:00', reminders: [{ beforeDueMinutes: 1440 }] });
    // Thunderbird: a repeating task starting 09:00, due 09:30, alarm 15 minutes before the start
    const tb = read(vtodo('DTSTART;TZID=Europe/Berlin:20261207T090000', 'DUE;TZID=Europe/Berlin:20261207T093000', 'RRULE:FREQ=WEEKLY;BYDAY=MO', 'BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;VALUE=DURATION:-PT15M', 'DESCRIPTION:Default Mozilla Description', 'END:VALARM'));
    expect(tb.reminders).toEqual([{ beforeDueMinutes: 45 }]);
    // written back, the repeating task starts when due (DTSTART = DUE): the alarm is said from DUE, still at 08:45
    const weekly = recurring(rule({ type: 'WEEKDAY', weekdays: [0] }), '2026-12-07', '2026-12-07', { dueTime: '09:30', reminders: tb.reminders });
    expect(triggers(taskCalendar(weekly, { ...zone, kept: tb.kept }))).toEqual(['TRIGGER;RELATED=END:-PT45M']);
    // a one-time task keeps the client's DTSTART, and with it the client's own alarm
    const once = read(vtodo('DTSTART:20261201T080000Z', 'DUE:20261203T170000Z', 'BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;RELATED=START:-PT10M', 'END:VALARM'));
    expect(once.reminders).toEqual([{ beforeDueMinutes: 2 * 1440 + 9 * 60 + 10 }]);
    expect(triggers(taskCalendar(task({ dueDate: '2026-12-03', dueTime: '18:00', reminders: once.reminders }), { ...zone, kept: once.kept }))).toEqual(['TRIGGER;RELATED=START:-PT10M']);
    const notOurs = read(
      vtodo(
        'DTSTART:20261201T080000Z',
        'DUE:20261203T170000Z',
        ...['BEGIN:VALARM', 'ACTION:EMAIL', 'SUMMARY:s', 'DESCRIPTION:d', 'ATTENDEE:mailto:a@localhost', 'TRIGGER;RELATED=END:-PT10M', 'END:VALARM'],
        ...['BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;RELATED=END:PT10M', 'END:VALARM'], // after the due time
        ...['BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;VALUE=DATE-TIME:20261203T170000', 'END:VALARM'], // floating: not an instant
        ...['BEGIN:VALARM', 'ACTION:DISPLAY', 'TRIGGER;RELATED=END:-P29D', 'END:VALARM'], // beyond 28 days
      ),
    );
    expect(notOurs.reminders).toEqual([]);
    expect(notOurs.kept.components).toHaveLength(4);
    const out = taskCalendar(task({ dueDate: '2026-12-03', dueTime: '18:00', reminders: [] }), { ...zone, kept: notOurs.kept });
    expect(triggers(out)).toEqual(['TRIGGER;RELATED=END:-PT10M', 'TRIGGER;RELATED=END:PT10M', 'TRIGGER;VALUE=DATE-TIME:20261203T170000', 'TRIGGER;RELATED=END:-P29D']);
  });

  it('a client\'s alarm comes back as it wrote it while the task has that reminder; a reminder removed in the app takes it away', () => {
    const apple = read(
      vtodo(
        'DUE:20261203T170000Z',
        ...['BEGIN:VALARM', 'UID:A1', 'X-WR-ALARMUID:A1', 'ACTION:DISPLAY', 'DESCRIPTION:Reminder', 'TRIGGER;VALUE=DATE-TIME:20261203T160000Z', 'ACKNOWLEDGED:20261203T160100Z', 'END:VALARM'],
        ...['BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:Reminder', 'TRIGGER;RELATED=END:-PT5M', 'END:VALARM'],
      ),
    );
    expect(apple.reminders).toEqual([{ at: '2026-12-03T16:00:00.000Z' }, { beforeDueMinutes: 5 }]);
    const same = taskCalendar(task({ dueDate: '2026-12-03', dueTime: '18:00', reminders: apple.reminders }), { ...zone, kept: apple.kept });
    for (const line of ['UID:A1', 'X-WR-ALARMUID:A1', 'ACKNOWLEDGED:20261203T160100Z', 'TRIGGER;VALUE=DATE-TIME:20261203T160000Z', 'TRIGGER;RELATED=END:-PT5M']) expect(same).toContain(`${line}\r\n`);
    expect(alarms(same)).toHaveLength(2);
    // the web app snoozed (an instant with milliseconds) and removed the 5-minute one
    const changed = taskCalendar(task({ dueDate: '2026-12-03', dueTime: '18:00', reminders: [{ at: '2026-12-03T16:00:00.000Z' }, { at: '2026-12-03T17:30:00.250Z' }] }), { ...zone, kept: apple.kept });
    expect(triggers(changed)).toEqual(['TRIGGER;VALUE=DATE-TIME:20261203T160000Z', 'TRIGGER;VALUE=DATE-TIME:20261203T173000Z']);
    expect(changed).toContain('UID:A1\r\n');
    expect(sameReminders(read(changed).reminders, [{ at: '2026-12-03T17:30:00.250Z' }, { at: '2026-12-03T16:00:00Z' }])).toBe(true);
  });

  it('more than five alarms: five reminders and a note; the same alarm twice is one reminder', () => {
    const alarm = (m: number) => ['BEGIN:VALARM', 'ACTION:DISPLAY', 'DESCRIPTION:r', `TRIGGER;RELATED=END:-PT${m}M`, 'END:VALARM'];
    const r = parseCalendarObject(vtodo('DUE:20261203T170000Z', ...[1, 2, 2, 3, 4, 5, 6, 7].flatMap(alarm)), zone);
    expect(r.ok && r.task.reminders.map((x) => ('beforeDueMinutes' in x ? x.beforeDueMinutes : x.at))).toEqual([1, 2, 3, 4, 5]);
    expect(r.ok && r.issues.map((i) => [i.property, i.fatal])).toEqual([['VALARM', false]]);
    expect(r.ok && r.issues[0]!.message).toMatch(/at most 5 reminders here: 2 more were not kept/);
  });
});
