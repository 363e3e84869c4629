import ICAL from 'ical.js';
import type { Task } from '@tasksvc/proto';
import { tzlib_get_ical_block } from 'timezones-ical-library';
import { isValidTimeZone, localDate, startOfLocalDay, utcOffsetMinutes, type LocalDate } from '@tasksvc/proto/calendar/dates.ts';
import type { RecurrenceRule, RecurrenceType } from '@tasksvc/proto/calendar/recurrence.ts';
import { DEFAULT_DUE_TIME, MAX_BEFORE_DUE_MINUTES, MAX_REMINDERS, type Reminder } from '@tasksvc/proto/calendar/reminders.ts';
import { clampedMonthEnds, dateOf, dateValue, newCalendar, readRecur, recurOf, serialize, taskUid, utcValue, type ReadSchedule } from './icalendar.ts';

/**
 * THE mapping between a task and an iCalendar VTODO (RFC 5545), both ways, pure (no I/O). CalDAV,
 * the .ics export and the iCalendar import all use it; nobody writes a second one.
 *
 * task → VTODO (`taskToVtodo`, `taskCalendar`):
 *   title → SUMMARY · notes → DESCRIPTION · due date → DUE;VALUE=DATE, or with a time of day
 *   DUE;TZID=<user's zone> plus that zone's VTIMEZONE · the recurrence → RRULE (and DTSTART = DUE,
 *   RDATEs for 29th/30th month ends) · priority HIGH/NORMAL/SOMEDAY → PRIORITY 1/5/9 · topic title →
 *   CATEGORIES · completion → STATUS:COMPLETED, COMPLETED, PERCENT-COMPLETE:100 (else NEEDS-ACTION)
 *   · parent task → RELATED-TO;RELTYPE=PARENT · reminders → VALARM (ACTION:DISPLAY; `at` an absolute
 *   TRIGGER in UTC, `beforeDueMinutes` a TRIGGER;RELATED=END before DUE — see `alarmReminder`) ·
 *   what a client wrote that has no field here (kept properties and components: X- properties,
 *   alarms that are not reminders here, DTSTART, CLASS…) → returned unchanged.
 *   Fields iCalendar has no word for travel as X-TASKSVC-* properties (type DAILY_ELIGIBLE, a repeat
 *   counted from completion, estimate, energy, coins), so an .ics export reads back whole.
 * VTODO → task (`parseVtodo`, `parseCalendarObject`, `parseVtodos`): the reverse, PRIORITY 1–4 →
 *   HIGH, 0/5/none → NORMAL, 6–9 → SOMEDAY, with a report of what cannot be expressed: a `fatal`
 *   issue (an RRULE the model cannot hold, a bad date) means storing it would change what the
 *   client meant; the others name what was dropped or adjusted.
 */

type TaskType = Task['type'];
type TaskPriority = Task['priority'];
type EnergyLevel = NonNullable<Task['energyLevel']>;

/** What the mapper reads of a task: a task row, the API's task and an export record all fit. */
export interface VtodoSource {
  id: string;
  title: string;
  notes: string | null;
  type: TaskType;
  priority: TaskPriority;
  dueDate: string | null;
  /** `HH:MM` in the user's zone, with a due date (absent where the model has no time of day) */
  dueTime?: string | null;
  /** absent: the source has no reminders field (a client's VALARMs are then returned as they were) */
  reminders?: readonly Reminder[] | null;
  nextDueDate: string | null;
  recurrenceType: RecurrenceType | null;
  recurrenceInterval: number | null;
  recurrenceWeekdays: number[] | null;
  recurrenceWeekOfMonth: number | null;
  recurrenceFixed: boolean;
  /** the schedule's anchor (defaults to the next due date) */
  recurrenceAnchor?: string | null;
  completedAt: Date | string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
  estimatedMinutes?: number | null;
  energyLevel?: EnergyLevel | null;
  coinValue?: number;
}

/**
 * What a client wrote that has no task field, kept per task and written back unchanged: whole
 * properties and subcomponents as jCal (RFC 7265), and the client's own PRIORITY number, returned
 * while it still means the task's priority (2 stays 2, not 1). JSON, so it is stored as it is.
 */
export interface KeptProperties {
  props: unknown[];
  components: unknown[];
  /** the PRIORITY the client sent (null: none), while it maps to the stored priority */
  priority?: number | null;
  /** the client's VALARMs that are reminders here, returned as written while the task has that reminder */
  alarms?: unknown[];
}

export interface VtodoContext {
  /** the user's IANA zone: DUE with a time of day is written in it */
  timezone: string;
  /** the UID a client gave the task (default `taskUid(id)`) */
  uid?: string | null;
  topicTitle?: string | null;
  /** UID of the parent task (RELATED-TO;RELTYPE=PARENT) */
  parentUid?: string | null;
  kept?: KeptProperties | null;
}

/** Our own X- properties: what the model has and iCalendar has no word for. */
const X = {
  type: 'x-tasksvc-type',
  from: 'x-tasksvc-recurrence-from',
  estimate: 'x-tasksvc-estimated-minutes',
  energy: 'x-tasksvc-energy',
  coins: 'x-tasksvc-coins',
} as const;

const PRIORITY_NUMBER: Record<TaskPriority, number> = { HIGH: 1, NORMAL: 5, SOMEDAY: 9 };

/** RFC 5545 PRIORITY (0 = undefined, 1 highest … 9 lowest) → the task's priority. */
export function priorityOf(n: number | null | undefined): TaskPriority {
  if (!n || n === 5 || n < 0 || n > 9) return 'NORMAL';
  return n < 5 ? 'HIGH' : 'SOMEDAY';
}

const toDate = (t: Date | string) => (t instanceof Date ? t : new Date(t));

/** The VTIMEZONE of an IANA zone (timezones-ical-library's table), or null when it has none. */
export function vtimezone(zone: string): ICAL.Component | null {
  if (zone === 'UTC' || !isValidTimeZone(zone)) return null;
  const block = tzlib_get_ical_block(zone);
  const text = Array.isArray(block) ? block[0] : '';
  return text ? new ICAL.Component(ICAL.parse(text)) : null;
}

/** DUE as a date, or as a date-time in the user's zone (UTC written as such). */
function dueValue(date: LocalDate, time: string | null | undefined, zone: string): { value: ICAL.Time; tzid: string | null } {
  if (!time) return { value: dateValue(date), tzid: null };
  const [h, m] = time.split(':').map(Number) as [number, number];
  const d = dateValue(date);
  const value = ICAL.Time.fromData({ year: d.year, month: d.month, day: d.day, hour: h, minute: m, second: 0, isDate: false });
  if (zone === 'UTC') value.zone = ICAL.Timezone.utcTimezone;
  return { value, tzid: zone === 'UTC' ? null : zone };
}

function ruleOf(t: VtodoSource): RecurrenceRule | null {
  if (t.type !== 'RECURRING' || !t.recurrenceType) return null;
  return { type: t.recurrenceType, interval: t.recurrenceInterval ?? 1, weekdays: t.recurrenceWeekdays ?? [], weekOfMonth: t.recurrenceWeekOfMonth, fixed: t.recurrenceFixed };
}

// ─── reminders ↔ VALARM ────────────────────────────────────────────────────────────────────

/** What a relative TRIGGER counts from: DUE as a date, as a date-time, or nothing (no DUE). */
type DueKind = 'date' | 'date-time' | null;

/**
 * A reminder counts back from the due time, which is DEFAULT_DUE_TIME on a date without a time of
 * day; an iCalendar TRIGGER counts from DUE, the date's midnight. The offset bridges the two, so a
 * client fires the alarm at the instant the app does ("30 min before" on a date: PT8H30M).
 */
const DATE_DUE_MINUTES = (([h, m]) => h! * 60 + m!)(DEFAULT_DUE_TIME.split(':').map(Number));
const offsetOf = (due: Exclude<DueKind, null>) => (due === 'date' ? DATE_DUE_MINUTES : 0);

/** A reminder's identity to the second (TRIGGER has no fractions: a snoozed `at` with milliseconds is the same reminder). */
export const alarmKey = (r: Reminder): string => ('at' in r ? `at:${Math.floor(Date.parse(r.at) / 1000)}` : `before:${r.beforeDueMinutes}`);

/** Whether two reminder lists say the same (order aside). */
export const sameReminders = (a: readonly Reminder[], b: readonly Reminder[]): boolean =>
  a.length === b.length && a.map(alarmKey).sort().join() === b.map(alarmKey).sort().join();

/**
 * The reminder a VALARM is, or null when the app cannot hold it (it is kept as the client wrote it):
 * ACTION:DISPLAY with an absolute TRIGGER in UTC, or a duration in whole minutes that ends before
 * the due time (at most 28 days): RELATED=END counts from DUE, RELATED=START (the default) from
 * DTSTART, `lead` minutes before DUE (0 without a DTSTART, as clients that write no start mean DUE).
 */
function alarmReminder(alarm: ICAL.Component, due: DueKind, lead: number): Reminder | null {
  if (String(alarm.getFirstPropertyValue('action') ?? '').toUpperCase() !== 'DISPLAY') return null;
  const trigger = alarm.getFirstProperty('trigger');
  const value = trigger?.getFirstValue();
  if (value instanceof ICAL.Time) return !value.isDate && value.zone === ICAL.Timezone.utcTimezone ? { at: value.toJSDate().toISOString() } : null;
  if (!(value instanceof ICAL.Duration) || !due) return null;
  const related = String(trigger!.getParameter('related') ?? 'START').toUpperCase();
  if (related !== 'END' && related !== 'START') return null;
  const before = (related === 'START' ? lead : 0) + offsetOf(due) - value.toSeconds() / 60;
  return Number.isInteger(before) && before >= 0 && before <= MAX_BEFORE_DUE_MINUTES ? { beforeDueMinutes: before } : null;
}

/** Minutes from a VTODO's DTSTART to its DUE (0 without either); a date is its midnight in the user's zone. */
function startLead(v: ICAL.Component, opts: ParseOptions): number {
  const at = (name: string): number | null => {
    const p = v.getFirstProperty(name);
    const t = p?.getFirstValue();
    if (!(t instanceof ICAL.Time)) return null;
    if (t.isDate) return startOfLocalDay(dateOf(t), opts.timezone).getTime();
    const tzid = p!.getParameter('tzid');
    return instantOf(t, typeof tzid === 'string' ? tzid : null, opts).instant.getTime();
  };
  const start = at('dtstart');
  const due = at('due');
  return start === null || due === null ? 0 : Math.round((due - start) / 60_000);
}

/** The VALARM of a reminder of ours (DESCRIPTION is the task's title: DISPLAY requires one). */
function reminderAlarm(r: Reminder, due: DueKind, title: string): ICAL.Component | null {
  if (!('at' in r) && !due) return null;
  const alarm = new ICAL.Component('valarm');
  alarm.addPropertyWithValue('action', 'DISPLAY');
  alarm.addPropertyWithValue('description', title);
  if ('at' in r) alarm.addPropertyWithValue('trigger', utcValue(new Date(r.at))); // ical.js writes VALUE=DATE-TIME itself
  else alarm.addPropertyWithValue('trigger', ICAL.Duration.fromSeconds((offsetOf(due!) - r.beforeDueMinutes) * 60)).setParameter('related', 'END');
  return alarm;
}

/** Names the mapper writes itself: a kept property of the same name is not written twice. */
const OWN = new Set(['uid', 'dtstamp', 'created', 'last-modified', 'summary', 'description', 'due', 'rrule', 'rdate', 'exdate', 'priority', 'categories', 'status', 'completed', 'percent-complete', ...Object.values(X)]);

/** The VTODO of a task. DTSTAMP is the last change (the object is not a scheduling message), so the text is a function of the task. */
export function taskToVtodo(task: VtodoSource, ctx: VtodoContext): ICAL.Component {
  const v = new ICAL.Component('vtodo');
  const updated = utcValue(toDate(task.updatedAt));
  v.addPropertyWithValue('uid', ctx.uid ?? taskUid(task.id));
  v.addPropertyWithValue('dtstamp', updated);
  v.addPropertyWithValue('created', utcValue(toDate(task.createdAt)));
  v.addPropertyWithValue('last-modified', updated);
  v.addPropertyWithValue('summary', task.title);
  if (task.notes) v.addPropertyWithValue('description', task.notes);
  const rule = ruleOf(task);
  const due = rule ? task.nextDueDate : task.dueDate;
  if (due) {
    const { value, tzid } = dueValue(due, task.dueTime, ctx.timezone);
    const dueProp = v.addPropertyWithValue('due', value);
    if (tzid) dueProp.setParameter('tzid', tzid);
    if (rule) {
      // a recurrence set counts from DTSTART: the current occurrence
      const start = v.addPropertyWithValue('dtstart', value.clone());
      if (tzid) start.setParameter('tzid', tzid);
      const anchor = task.recurrenceAnchor ?? due;
      v.addPropertyWithValue('rrule', recurOf(rule, anchor));
      const extra = clampedMonthEnds(rule, anchor, due).filter((d) => d !== due);
      if (extra.length > 0) {
        const rdate = new ICAL.Property('rdate');
        rdate.setValues(extra.map(dateValue));
        v.addProperty(rdate);
      }
    }
  }
  const kept = ctx.kept;
  const clientPriority = kept?.priority;
  if (clientPriority !== undefined && priorityOf(clientPriority) === task.priority) {
    if (clientPriority !== null) v.addPropertyWithValue('priority', clientPriority);
  } else {
    v.addPropertyWithValue('priority', PRIORITY_NUMBER[task.priority]);
  }
  const keptProps = (kept?.props ?? []).map((p) => new ICAL.Property(p as never));
  const keptCategories = keptProps.filter((p) => p.name === 'categories').flatMap((p) => p.getValues().map(String));
  const categories = [...new Set([...(ctx.topicTitle ? [ctx.topicTitle] : []), ...keptCategories])];
  if (categories.length > 0) {
    const cat = new ICAL.Property('categories');
    cat.setValues(categories);
    v.addProperty(cat);
  }
  if (task.completedAt) {
    v.addPropertyWithValue('status', 'COMPLETED');
    v.addPropertyWithValue('completed', utcValue(toDate(task.completedAt)));
    v.addPropertyWithValue('percent-complete', 100);
  } else {
    // a client's "in process" and its percentage stay while the task is open
    const status = keptProps.find((p) => p.name === 'status')?.getFirstValue();
    v.addPropertyWithValue('status', status === 'IN-PROCESS' ? 'IN-PROCESS' : 'NEEDS-ACTION');
    const percent = keptProps.find((p) => p.name === 'percent-complete')?.getFirstValue();
    if (typeof percent === 'number' && percent > 0 && percent < 100) v.addPropertyWithValue('percent-complete', percent);
  }
  if (ctx.parentUid) v.addPropertyWithValue('related-to', ctx.parentUid).setParameter('reltype', 'PARENT');
  if (task.type === 'DAILY_ELIGIBLE') v.addPropertyWithValue(X.type, task.type);
  if (rule && !rule.fixed) v.addPropertyWithValue(X.from, 'COMPLETION');
  if (task.estimatedMinutes) v.addPropertyWithValue(X.estimate, String(task.estimatedMinutes));
  if (task.energyLevel) v.addPropertyWithValue(X.energy, task.energyLevel);
  if (task.coinValue !== undefined && task.coinValue !== 1) v.addPropertyWithValue(X.coins, String(task.coinValue));
  for (const p of keptProps) {
    // DTSTART is ours on a repeating task (the current occurrence), the parent ours when we know it
    if (OWN.has(p.name) || (rule && p.name === 'dtstart') || (ctx.parentUid && isParentLink(p))) continue;
    v.addProperty(p);
  }
  for (const c of kept?.components ?? []) v.addSubcomponent(new ICAL.Component(c as never));
  const dueKind: DueKind = due ? (task.dueTime ? 'date-time' : 'date') : null;
  if (task.reminders === undefined) {
    for (const a of kept?.alarms ?? []) v.addSubcomponent(new ICAL.Component(a as never));
  } else {
    // a client's own VALARM (its UID, ACKNOWLEDGED, X- properties) stands for a reminder the task still has
    const wanted = new Map((task.reminders ?? []).map((r) => [alarmKey(r), r]));
    const lead = startLead(v, { timezone: ctx.timezone });
    for (const a of kept?.alarms ?? []) {
      const alarm = new ICAL.Component(a as never);
      const r = alarmReminder(alarm, dueKind, lead);
      if (r && wanted.delete(alarmKey(r))) v.addSubcomponent(alarm);
    }
    for (const r of wanted.values()) {
      const alarm = reminderAlarm(r, dueKind, task.title);
      if (alarm) v.addSubcomponent(alarm);
    }
  }
  return v;
}

/** RELATED-TO naming a parent (RELTYPE=PARENT is the default). */
const isParentLink = (p: ICAL.Property) => p.name === 'related-to' && String(p.getParameter('reltype') ?? 'PARENT').toUpperCase() === 'PARENT';

/** TZIDs a component's properties name. */
export function tzidsOf(comp: ICAL.Component, into = new Set<string>()): Set<string> {
  for (const p of comp.getAllProperties()) {
    const tzid = p.getParameter('tzid');
    if (typeof tzid === 'string') into.add(tzid);
  }
  for (const c of comp.getAllSubcomponents()) tzidsOf(c, into);
  return into;
}

/**
 * A VCALENDAR holding the VTODOs, with a VTIMEZONE for every zone they name (RFC 5545 requires
 * one per TZID). `name`: the calendar's display name for a file (X-WR-CALNAME).
 */
export function vtodoCalendar(todos: ICAL.Component[], opts: { name?: string } = {}): string {
  const cal = newCalendar(opts.name ? { 'x-wr-calname': opts.name } : {});
  const zones = new Set<string>();
  for (const t of todos) tzidsOf(t, zones);
  for (const z of [...zones].sort()) {
    const tz = vtimezone(z);
    if (tz) cal.addSubcomponent(tz);
  }
  for (const t of todos) cal.addSubcomponent(t);
  return serialize(cal);
}

/** One task as a calendar object resource (a CalDAV `.ics`, RFC 4791 §4.1: one UID per resource). */
export const taskCalendar = (task: VtodoSource, ctx: VtodoContext): string => vtodoCalendar([taskToVtodo(task, ctx)]);

// ─── VTODO → task ──────────────────────────────────────────────────────────────────────────

export interface VtodoIssue {
  /** the iCalendar property (upper case) or component the issue is about */
  property: string;
  message: string;
  /** storing the task would change what the client meant: refuse it */
  fatal: boolean;
}

/** The task a VTODO describes, in the task's own terms. */
export interface VtodoTask {
  uid: string;
  title: string;
  notes: string | null;
  type: TaskType;
  priority: TaskPriority;
  /** DUE's calendar date in the user's zone (a repeating task's current occurrence) */
  dueDate: string | null;
  /** DUE's time of day in the user's zone (`HH:MM`) when DUE was a date-time */
  dueTime: string | null;
  /** RECURRING: the schedule (rule, anchor, next due date); null otherwise */
  schedule: ReadSchedule | null;
  /** the VALARMs that are reminders here (alarmReminder), at most MAX_REMINDERS */
  reminders: Reminder[];
  /** STATUS (and COMPLETED): `cancelled` is STATUS:CANCELLED */
  status: 'open' | 'completed' | 'cancelled';
  completedAt: Date | null;
  /** every CATEGORIES value, in order */
  categories: string[];
  /** RELATED-TO with RELTYPE=PARENT (or none, the default) */
  parentUid: string | null;
  estimatedMinutes: number | null;
  energyLevel: EnergyLevel | null;
  coinValue: number | null;
  kept: KeptProperties;
}

/** An occurrence a client wrote as its own component (RECURRENCE-ID): what it says of its state. */
export interface VtodoOccurrence {
  /** the occurrence's date (RECURRENCE-ID) in the user's zone */
  date: LocalDate;
  status: 'open' | 'completed' | 'cancelled';
  completedAt: Date | null;
}

export type VtodoRead = { ok: true; task: VtodoTask; issues: VtodoIssue[] } | { ok: false; issues: VtodoIssue[] };

export interface ParseOptions {
  /** the user's IANA zone: date-times are converted into it, floating ones are read in it */
  timezone: string;
  /** VTIMEZONEs of the enclosing calendar, by TZID (for zones that are not IANA names) */
  zones?: Map<string, ICAL.Timezone>;
  /** keep RELATED-TO as a kept property instead of reading the parent (no parent field to hold it) */
  keepRelatedTo?: boolean;
}

/** The instant a DATE-TIME value names: UTC, a TZID (IANA name or the calendar's VTIMEZONE), or floating (the user's zone). */
function instantOf(t: ICAL.Time, tzid: string | null, opts: ParseOptions): { instant: Date; zoneKnown: boolean } {
  const wallUtc = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  if (t.zone === ICAL.Timezone.utcTimezone) return { instant: new Date(wallUtc), zoneKnown: true };
  const own = tzid ? opts.zones?.get(tzid) : undefined;
  if (own) return { instant: new Date(wallUtc - own.utcOffset(t) * 1000), zoneKnown: true };
  const zone = tzid && isValidTimeZone(tzid) ? tzid : opts.timezone;
  // the offset at the wall time's own instant (two steps settle it, DST changes included)
  const first = wallUtc - utcOffsetMinutes(new Date(wallUtc), zone) * 60_000;
  return { instant: new Date(wallUtc - utcOffsetMinutes(new Date(first), zone) * 60_000), zoneKnown: !tzid || zone === tzid };
}

/** The user's local date and time of a date-time value. */
function localOf(t: ICAL.Time, tzid: string | null, opts: ParseOptions): { date: LocalDate; time: string; zoneKnown: boolean } {
  const { instant, zoneKnown } = instantOf(t, tzid, opts);
  const offset = utcOffsetMinutes(instant, opts.timezone);
  const local = new Date(instant.getTime() + offset * 60_000);
  return { date: localDate(instant, opts.timezone), time: local.toISOString().slice(11, 16), zoneKnown };
}

const ENERGY = new Set(['HIGH', 'MEDIUM', 'LOW']);
const smallInt = (v: unknown, min: number, max: number): number | null => {
  const n = Number(v);
  return Number.isInteger(n) && n >= min && n <= max ? n : null;
};

/** Read one VTODO component. */
export function parseVtodo(v: ICAL.Component, opts: ParseOptions): VtodoRead {
  const issues: VtodoIssue[] = [];
  const fatal = (property: string, message: string) => issues.push({ property, message, fatal: true });
  const note = (property: string, message: string) => issues.push({ property, message, fatal: false });
  const text = (name: string) => {
    const value = v.getFirstPropertyValue(name);
    return value === null || value === undefined ? null : String(value);
  };

  const uid = text('uid');
  if (!uid) fatal('UID', 'the task has no UID');
  const title = (text('summary') ?? '').trim();
  if (title.length > 255) note('SUMMARY', 'the title was cut to 255 characters');
  if (!title) note('SUMMARY', 'the task has no title (SUMMARY); it is called "(untitled)"');
  let notes = text('description');
  if (notes !== null && notes.length > 5000) {
    note('DESCRIPTION', 'the notes were cut to 5000 characters');
    notes = notes.slice(0, 5000);
  }

  let dueDate: string | null = null;
  let dueTime: string | null = null;
  const dueProp = v.getFirstProperty('due') ?? (v.getFirstProperty('rrule') ? v.getFirstProperty('dtstart') : null);
  if (dueProp) {
    const value = dueProp.getFirstValue();
    if (!(value instanceof ICAL.Time)) fatal('DUE', 'DUE is not a date or date-time');
    else if (value.isDate) dueDate = dateOf(value);
    else {
      const tzid = dueProp.getParameter('tzid');
      const local = localOf(value, typeof tzid === 'string' ? tzid : null, opts);
      if (!local.zoneKnown) note('DUE', `the time zone ${String(tzid)} is unknown; the time was read in ${opts.timezone}`);
      dueDate = local.date;
      dueTime = local.time;
    }
    if (dueDate !== null && (dueDate < '1970-01-01' || dueDate > '2999-12-31')) {
      fatal('DUE', `the due date ${dueDate} is outside 1970-01-01 to 2999-12-31`);
      dueDate = null;
    }
  }

  let schedule: ReadSchedule | null = null;
  const rrules = v.getAllProperties('rrule');
  if (rrules.length > 1) fatal('RRULE', 'a task repeats by one rule here; this one has several');
  else if (rrules.length === 1) {
    if (!dueDate) fatal('RRULE', 'a repeating task needs a due date (DUE or DTSTART)');
    else {
      const read = readRecur(rrules[0]!.toJSON()[3] as Record<string, unknown>, dueDate);
      if (!read.ok) fatal('RRULE', read.message);
      else {
        schedule = read.schedule;
        if (text(X.from)?.toUpperCase() === 'COMPLETION') schedule.rule.fixed = false;
        if (schedule.nextDueDate !== dueDate) note('DUE', `the due date ${dueDate} is not on the repeat rule; the task is due on ${schedule.nextDueDate}, the rule's next date`);
        // RDATEs are accepted where they are what the rule's month ends clamp to (our own writing)
        const clamped = new Set(clampedMonthEnds(schedule.rule, schedule.anchor, schedule.nextDueDate));
        const rdates = v.getAllProperties('rdate').flatMap((p) => p.getValues()).map((t) => (t instanceof ICAL.Time ? dateOf(t) : String(t)));
        if (rdates.some((d) => !clamped.has(d))) fatal('RDATE', 'extra dates of a repeating task (RDATE) are not supported');
      }
    }
  } else if (v.getFirstProperty('rdate')) fatal('RDATE', 'a task with several dates (RDATE) but no repeat rule is not supported');
  if (v.getFirstProperty('exdate')) fatal('EXDATE', 'leaving out single dates of a repeating task (EXDATE) is not supported');
  if (schedule && v.getFirstProperty('dtstart') && v.getFirstProperty('due')) {
    const start = v.getFirstPropertyValue('dtstart');
    if (start instanceof ICAL.Time && dateOf(start) !== dateOf(v.getFirstPropertyValue('due') as ICAL.Time)) {
      note('DTSTART', 'a repeating task starts on its due date here: its own start date was not kept');
    }
  }

  const status = (text('status') ?? '').toUpperCase();
  const completedValue = v.getFirstPropertyValue('completed');
  const completedAt = completedValue instanceof ICAL.Time ? instantOf(completedValue, null, { ...opts, timezone: 'UTC' }).instant : null;
  const state: VtodoTask['status'] = status === 'CANCELLED' ? 'cancelled' : status === 'COMPLETED' || (status === '' && completedAt) ? 'completed' : 'open';

  const priorityValue = v.getFirstPropertyValue('priority');
  const rawPriority = priorityValue === null || priorityValue === undefined ? null : Number(priorityValue);
  if (rawPriority !== null && !(Number.isInteger(rawPriority) && rawPriority >= 0 && rawPriority <= 9)) note('PRIORITY', `PRIORITY ${String(priorityValue)} is not 0 to 9; the task has normal priority`);
  const priority = priorityOf(rawPriority);

  const categories = v.getAllProperties('categories').flatMap((p) => p.getValues().map((c) => String(c).trim())).filter((c) => c.length > 0);

  let parentUid: string | null = null;
  const props: unknown[] = [];
  for (const p of v.getAllProperties()) {
    const name = p.name;
    if (!opts.keepRelatedTo && parentUid === null && isParentLink(p)) {
      parentUid = String(p.getFirstValue());
      continue;
    }
    // STATUS and PERCENT-COMPLETE of an open task are the client's own nuance: kept
    if ((name === 'status' && status === 'IN-PROCESS') || (name === 'percent-complete' && state === 'open')) {
      props.push(p.toJSON());
      continue;
    }
    if (OWN.has(name) || (name === 'dtstart' && schedule)) continue;
    props.push(p.toJSON());
  }
  // VALARMs the app can hold are reminders (the client's text kept with them); the others are kept as they are
  const dueKind: DueKind = dueDate === null ? null : dueTime === null ? 'date' : 'date-time';
  const lead = startLead(v, opts);
  const reminders = new Map<string, Reminder>();
  const alarms: unknown[] = [];
  const components: unknown[] = [];
  let dropped = 0;
  for (const c of v.getAllSubcomponents()) {
    const r = c.name === 'valarm' ? alarmReminder(c, dueKind, lead) : null;
    if (!r) components.push(c.toJSON());
    else if (reminders.has(alarmKey(r))) continue; // the same alarm twice is one reminder
    else if (reminders.size >= MAX_REMINDERS) dropped++;
    else {
      reminders.set(alarmKey(r), r);
      alarms.push(c.toJSON());
    }
  }
  if (dropped > 0) note('VALARM', `a task has at most ${MAX_REMINDERS} reminders here: ${dropped} more were not kept`);

  const typeX = text(X.type)?.toUpperCase();
  const energy = text(X.energy)?.toUpperCase() ?? null;
  const estimate = text(X.estimate);
  const coins = text(X.coins);
  if (issues.some((i) => i.fatal)) return { ok: false, issues };
  return {
    ok: true,
    issues,
    task: {
      uid: uid!,
      title: title.slice(0, 255) || '(untitled)',
      notes: notes || null,
      type: schedule ? 'RECURRING' : typeX === 'DAILY_ELIGIBLE' ? 'DAILY_ELIGIBLE' : 'ONE_TIME',
      priority,
      dueDate,
      dueTime,
      schedule,
      reminders: [...reminders.values()],
      status: state,
      completedAt: state === 'completed' ? (completedAt ?? null) : null,
      categories,
      parentUid,
      estimatedMinutes: estimate === null ? null : smallInt(estimate, 1, 1440),
      energyLevel: energy && ENERGY.has(energy) ? (energy as EnergyLevel) : null,
      coinValue: coins === null ? null : smallInt(coins, 1, 10),
      kept: { props, components, priority: rawPriority !== null && Number.isInteger(rawPriority) && rawPriority >= 0 && rawPriority <= 9 ? rawPriority : null, ...(alarms.length > 0 ? { alarms } : {}) },
    },
  };
}

/** A text as a VCALENDAR component, or why it is not one. */
export function parseCalendar(text: string): { ok: true; calendar: ICAL.Component } | { ok: false; message: string } {
  try {
    const jcal = ICAL.parse(text);
    // a file may hold several calendars (ICAL.parse answers a list then): the first is read
    const first = (Array.isArray(jcal[0]) ? jcal[0] : jcal) as unknown[];
    const calendar = new ICAL.Component(first as never);
    if (calendar.name !== 'vcalendar') return { ok: false, message: `expected a VCALENDAR, found ${calendar.name.toUpperCase()}` };
    return { ok: true, calendar };
  } catch (err) {
    return { ok: false, message: `not valid iCalendar: ${(err as Error).message}` };
  }
}

/** The calendar's own VTIMEZONEs, by TZID. */
function calendarZones(cal: ICAL.Component): Map<string, ICAL.Timezone> {
  const zones = new Map<string, ICAL.Timezone>();
  for (const z of cal.getAllSubcomponents('vtimezone')) {
    const tz = new ICAL.Timezone(z);
    if (tz.tzid) zones.set(tz.tzid, tz);
  }
  return zones;
}

/** An occurrence component (RECURRENCE-ID) as its date and state. */
function occurrenceOf(v: ICAL.Component, opts: ParseOptions): VtodoOccurrence | null {
  const rid = v.getFirstProperty('recurrence-id');
  const value = rid?.getFirstValue();
  if (!(value instanceof ICAL.Time)) return null;
  const tzid = rid!.getParameter('tzid');
  const date = value.isDate ? dateOf(value) : localOf(value, typeof tzid === 'string' ? tzid : null, opts).date;
  const status = String(v.getFirstPropertyValue('status') ?? '').toUpperCase();
  const completed = v.getFirstPropertyValue('completed');
  const completedAt = completed instanceof ICAL.Time ? instantOf(completed, null, { ...opts, timezone: 'UTC' }).instant : null;
  return { date, status: status === 'CANCELLED' ? 'cancelled' : status === 'COMPLETED' || completedAt ? 'completed' : 'open', completedAt };
}

export type CalendarObjectRead =
  | { ok: true; task: VtodoTask; occurrences: VtodoOccurrence[]; issues: VtodoIssue[] }
  | { ok: false; issues: VtodoIssue[]; /** the object holds no VTODO (e.g. an event) */ notTodo?: boolean };

/**
 * A calendar object resource (CalDAV PUT): one VTODO, optionally with occurrences of it written as
 * components of their own (same UID, RECURRENCE-ID), and the VTIMEZONEs it uses.
 */
export function parseCalendarObject(text: string, opts: ParseOptions): CalendarObjectRead {
  const parsed = parseCalendar(text);
  if (!parsed.ok) return { ok: false, issues: [{ property: 'VCALENDAR', message: parsed.message, fatal: true }] };
  const cal = parsed.calendar;
  const others = cal.getAllSubcomponents().filter((c) => c.name !== 'vtodo' && c.name !== 'vtimezone');
  const todos = cal.getAllSubcomponents('vtodo');
  if (todos.length === 0 || others.length > 0) {
    const found = [...new Set(others.map((c) => c.name.toUpperCase()))].join(', ') || 'nothing';
    return { ok: false, notTodo: true, issues: [{ property: 'VCALENDAR', message: `this calendar holds tasks (VTODO) only; the object has ${found}`, fatal: true }] };
  }
  const withZones = { ...opts, zones: calendarZones(cal) };
  const masters = todos.filter((t) => !t.getFirstProperty('recurrence-id'));
  const uids = new Set(todos.map((t) => String(t.getFirstPropertyValue('uid') ?? '')));
  if (masters.length !== 1 || uids.size !== 1) {
    return { ok: false, issues: [{ property: 'VTODO', message: 'a calendar object holds one task (one UID, one VTODO without RECURRENCE-ID)', fatal: true }] };
  }
  const read = parseVtodo(masters[0]!, withZones);
  if (!read.ok) return read;
  const occurrences = todos.filter((t) => t !== masters[0]).map((t) => occurrenceOf(t, withZones)).filter((o): o is VtodoOccurrence => o !== null);
  return { ok: true, task: read.task, occurrences, issues: read.issues };
}

/** Every VTODO of a file (an import), each read on its own; what is not a VTODO is counted. */
export function parseVtodos(text: string, opts: ParseOptions): { ok: true; todos: VtodoRead[]; skipped: Record<string, number> } | { ok: false; message: string } {
  const parsed = parseCalendar(text);
  if (!parsed.ok) return parsed;
  const cal = parsed.calendar;
  const withZones = { ...opts, zones: calendarZones(cal) };
  const skipped: Record<string, number> = {};
  const todos: VtodoRead[] = [];
  for (const c of cal.getAllSubcomponents()) {
    if (c.name === 'vtodo' && !c.getFirstProperty('recurrence-id')) todos.push(parseVtodo(c, withZones));
    else if (c.name !== 'vtimezone') skipped[c.name.toUpperCase()] = (skipped[c.name.toUpperCase()] ?? 0) + 1;
  }
  return { ok: true, todos, skipped };
}

/**
 * Kept properties with the client's CATEGORIES except `topicTitle` (the topic is the collection a
 * task lives in, or its own field; a rename must not leave the old title behind).
 */
export function keepCategories(kept: KeptProperties, categories: string[], topicTitle: string | null): KeptProperties {
  const own = categories.filter((c) => c !== topicTitle);
  if (own.length === 0) return kept;
  const cat = new ICAL.Property('categories');
  cat.setValues(own);
  return { ...kept, props: [...kept.props, cat.toJSON()] };
}

/** Kept properties with a RELATED-TO to `parentUid` (a parent the task cannot have here is returned as the client wrote it). */
export function keepParentLink(kept: KeptProperties, parentUid: string): KeptProperties {
  const link = new ICAL.Property('related-to');
  link.setValue(parentUid);
  link.setParameter('reltype', 'PARENT');
  return { ...kept, props: [...kept.props, link.toJSON()] };
}
