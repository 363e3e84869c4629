import ICAL from 'ical.js';
import { isValidDate } from '@tasksvc/proto/calendar/dates.ts';
import { parseCalendar, parseVtodo, type VtodoIssue } from '../../domain/vtodo.ts';
import type { ReadContext } from './context.ts';
import { digestKey, fileError, ImportFileError, plannedTask, type ImportPlan, type SourceLocation } from './plan.ts';

/**
 * iCalendar files with tasks (VTODO), as Thunderbird, Nextcloud Tasks and tasks.org/OpenTasks write
 * them. Each VTODO is read by THE mapper (domain/vtodo.ts, shared with CalDAV and the .ics export);
 * this module only turns its answers into the import's plan and report:
 *
 * - a repetition the mapper cannot hold (COUNT, UNTIL, BYSETPOS, several RRULEs, EXDATE…) is listed
 *   as not expressible and the task comes over without repeating, due on its DUE;
 * - a date that is not a real date (DUE:20241345) makes the file unreadable: 400 naming the line;
 * - STATUS:CANCELLED items are not imported; a completed repeating series comes over as done;
 * - the first CATEGORIES value is the topic, RELATED-TO (parent) the parent task when it is in the file;
 * - what has no field here (VALARM, X- properties, PERCENT-COMPLETE of an open task…) is named.
 * The source key of a task is its UID (`ics:<UID>`).
 */

/** Properties that are a client's bookkeeping, not the person's data: not worth a line in the report. */
const BOOKKEEPING = new Set(['dtstamp', 'created', 'last-modified', 'sequence', 'x-moz-generation', 'x-moz-lastack', 'x-apple-sort-order', 'class']);
/** Properties whose values are dates, checked as written (ical.js would roll 2024-13-45 over into 2025). */
const DATED = new Set(['due', 'dtstart', 'completed', 'recurrence-id', 'created', 'last-modified', 'dtstamp']);

/** The line of each component directly inside the VCALENDAR (BEGIN:VTODO…), in order. */
function componentLines(lines: string[]): number[] {
  const out: number[] = [];
  let depth = 0;
  lines.forEach((line, i) => {
    if (/^BEGIN:/i.test(line)) {
      if (depth === 1) out.push(i + 1);
      depth++;
    } else if (/^END:/i.test(line)) depth--;
  });
  return out;
}

/** The 1-based line of a component's first property `name` (or the component's own line). */
function propertyLine(lines: string[], start: number, name: string): number {
  for (let i = start; i < lines.length && !/^END:V(TODO|EVENT|JOURNAL)/i.test(lines[i]!); i++) {
    if (new RegExp(`^${name}[;:]`, 'i').test(lines[i]!)) return i + 1;
  }
  return start;
}

function validDateValue(v: unknown): boolean {
  if (typeof v !== 'string') return true;
  const m = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}):(\d{2}):(\d{2})Z?)?$/.exec(v);
  if (!m) return false;
  if (!isValidDate(m[1]!)) return false;
  return m[2] === undefined || (Number(m[2]) < 24 && Number(m[3]) < 60 && Number(m[4]) < 61);
}

/** Every date the VTODO writes, as written: a file with an impossible date is refused, naming it. */
function checkDates(todo: ICAL.Component, where: (property: string) => SourceLocation): void {
  for (const p of todo.getAllProperties()) {
    const [name, , , ...values] = p.toJSON() as [string, unknown, string, ...unknown[]];
    const bad = DATED.has(name) ? values.find((v) => !validDateValue(v)) : undefined;
    const until = name === 'rrule' ? (values[0] as { until?: unknown } | undefined)?.until : undefined;
    if (bad !== undefined) throw fileError(where(name), `${JSON.stringify(bad)} is not a real date`);
    if (until !== undefined && !validDateValue(until)) throw fileError(where('rrule'), `UNTIL ${JSON.stringify(until)} is not a real date`);
  }
}

const REPEAT_PROPS = ['rrule', 'rdate', 'exdate'];

export function readIcs(file: string, text: string, ctx: ReadContext, plan: ImportPlan, items: { count: number }): void {
  const parsed = parseCalendar(text);
  if (!parsed.ok) {
    const truncated = /began but did not end|unexpected end/i.test(parsed.message) ? ' — the file ends inside a component: is it truncated?' : '';
    throw fileError({ file, row: null, field: null }, `${parsed.message}${truncated}`);
  }
  const lines = text.replace(/\r?\n[ \t]/g, '\u0000').split(/\r?\n/).map((l) => l.replaceAll('\u0000', ''));
  // a folded line counts as the physical lines it spans, so line numbers match an editor's
  const physical: number[] = [];
  {
    let n = 1;
    for (const folded of text.split(/\r?\n(?![ \t])/)) {
      physical.push(n);
      n += folded.split(/\r?\n/).length;
    }
  }
  const lineOf = (unfolded: number) => physical[unfolded - 1] ?? unfolded;
  const starts = componentLines(lines);
  const cal = parsed.calendar;
  const zones = new Map<string, ICAL.Timezone>();
  for (const z of cal.getAllSubcomponents('vtimezone')) {
    const tz = new ICAL.Timezone(z);
    if (tz.tzid) zones.set(tz.tzid, tz);
  }
  const opts = { timezone: ctx.timeZone, zones };
  const uids = new Set(cal.getAllSubcomponents('vtodo').map((t) => String(t.getFirstPropertyValue('uid') ?? '')));
  const skipped = new Map<string, number>();

  cal.getAllSubcomponents().forEach((comp, index) => {
    const start = starts[index] ?? 1;
    const at = (field: string | null, line = start): SourceLocation => ({ file, row: lineOf(line), field });
    /** a property's place: its own line, named as iCalendar writes it */
    const prop = (name: string): SourceLocation => at(name.toUpperCase(), propertyLine(lines, start - 1, name));
    if (comp.name === 'vtimezone') return;
    if (++items.count > ctx.maxItems) throw fileError(at(null), `more than ${ctx.maxItems.toLocaleString('en')} components in one import: split the file`);
    if (comp.name !== 'vtodo') {
      skipped.set(comp.name.toUpperCase(), (skipped.get(comp.name.toUpperCase()) ?? 0) + 1);
      plan.problems.push({ ...at(comp.name.toUpperCase()), title: (comp.getFirstPropertyValue('summary') as string | null) ?? null, outcome: 'skipped', message: `a ${comp.name.toUpperCase()}, not a task (VTODO)` });
      return;
    }
    checkDates(comp, prop);
    const title = String(comp.getFirstPropertyValue('summary') ?? '').trim() || null;
    if (comp.getFirstProperty('recurrence-id')) {
      plan.problems.push({ ...prop('recurrence-id'), title, outcome: 'skipped', message: "one occurrence's own state (RECURRENCE-ID): a repeating task here has no per-occurrence state" });
      return;
    }
    if (!comp.getFirstPropertyValue('uid')) {
      // no UID (a hand-written file): the task's text stands in as its key
      comp.updatePropertyWithValue('uid', digestKey('nouid', comp.toString()));
    }
    let read = parseVtodo(comp, opts);
    let notRepeating: VtodoIssue[] = [];
    if (!read.ok && read.issues.filter((i) => i.fatal).every((i) => REPEAT_PROPS.includes(i.property.toLowerCase()))) {
      // the repetition cannot be held: the task comes over without it (reported), due on its DUE
      notRepeating = read.issues.filter((i) => i.fatal);
      const plain = ICAL.Component.fromString(comp.toString());
      for (const name of REPEAT_PROPS) plain.removeAllProperties(name);
      read = parseVtodo(plain, opts);
    }
    if (!read.ok) {
      const fatal = read.issues.find((i) => i.fatal)!;
      if (fatal.property === 'DUE') throw new ImportFileError([{ ...prop('due'), message: fatal.message }]);
      plan.problems.push({ ...prop(fatal.property), title, outcome: 'skipped', message: read.issues.filter((i) => i.fatal).map((i) => i.message).join('; ') });
      return;
    }
    const v = read.task;
    const rruleText = comp.getFirstProperty('rrule') ? `RRULE:${String(comp.getFirstPropertyValue('rrule'))}` : '';
    for (const i of read.issues) plan.problems.push({ ...prop(i.property), title: v.title, outcome: 'changed', message: i.message });
    if (v.status === 'cancelled') {
      plan.problems.push({ ...prop('status'), title: v.title, outcome: 'skipped', message: 'cancelled in its app (STATUS:CANCELLED): not imported' });
      return;
    }
    const task = plannedTask(`ics:${v.uid}`, prop('summary'), v.title, {
      notes: v.notes,
      type: v.type,
      priority: v.priority,
      dueDate: v.dueDate,
      dueTime: v.dueDate ? v.dueTime : null,
      estimatedMinutes: v.estimatedMinutes,
      energyLevel: v.energyLevel,
      coinValue: v.coinValue ?? 1,
      reminders: v.reminders,
    });
    if (v.dueTime && !ctx.dueTime) plan.problems.push({ ...prop('due'), title: v.title, outcome: 'changed', message: `the time of day ${v.dueTime} is not kept (tasks here have a due date only)` });
    if (notRepeating.length > 0) {
      plan.recurrences.push({ ...prop('rrule'), title: v.title, source: rruleText || 'RDATE/EXDATE', outcome: 'not-expressible', rule: null, message: `${notRepeating.map((i) => i.message).join('; ')}: imported without repeating${v.dueDate ? `, due ${v.dueDate}` : ''}` });
    }
    if (v.schedule) {
      if (v.status === 'completed') {
        plan.recurrences.push({ ...prop('rrule'), title: v.title, source: rruleText, outcome: 'not-expressible', rule: null, message: 'the whole series is completed: imported as a done task without repeating' });
        task.type = 'ONE_TIME';
        task.completedAt = (v.completedAt ?? new Date(0)).toISOString();
      } else {
        task.rule = v.schedule.rule;
        task.anchor = v.schedule.anchor;
        task.nextDueDate = v.schedule.nextDueDate;
        task.dueDate = v.schedule.nextDueDate;
        plan.recurrences.push({ ...prop('rrule'), title: v.title, source: rruleText, outcome: 'mapped', rule: v.schedule.rule, message: `${ctx.describe(v.schedule.rule, v.schedule.nextDueDate)}; next due ${v.schedule.nextDueDate}` });
      }
    } else if (v.status === 'completed') {
      const stamp = comp.getFirstPropertyValue('dtstamp');
      task.completedAt = (v.completedAt ?? (stamp instanceof ICAL.Time ? stamp.toJSDate() : new Date())).toISOString();
    }
    const [topic, ...more] = v.categories;
    if (topic) {
      const key = `ics:topic:${topic.toLowerCase()}`;
      if (!plan.topics.some((t) => t.key === key)) {
        plan.topics.push({ key, at: at('CATEGORIES'), title: topic, description: null, color: null, icon: null, priority: 'NORMAL', archived: false, sequential: false, defaultEnergyLevel: null });
      }
      task.topicKey = key;
    }
    if (more.length > 0) plan.problems.push({ ...prop('categories'), title: v.title, outcome: 'changed', message: `a task has one topic here: it is in "${topic}"; ${more.map((c) => `"${c}"`).join(', ')} not kept` });
    if (v.parentUid) {
      if (uids.has(v.parentUid) && v.parentUid !== v.uid) task.parentKey = `ics:${v.parentUid}`;
      else plan.problems.push({ ...prop('related-to'), title: v.title, outcome: 'changed', message: `its parent task (${v.parentUid}) is not in the file: imported as a task of its own` });
    }
    const lost = [
      ...new Set([
        ...v.kept.props.map((p) => (p as [string])[0]).filter((n) => !BOOKKEEPING.has(n) && !(n === 'related-to')),
        ...v.kept.components.map((c) => (c as [string])[0]),
      ]),
    ];
    if (lost.length > 0) plan.problems.push({ ...at(null), title: v.title, outcome: 'changed', message: `not kept (no such field here): ${lost.map((n) => n.toUpperCase()).join(', ')}` });
    plan.tasks.push(task);
  });
  if (!cal.getAllSubcomponents('vtodo').length) throw fileError({ file, row: null, field: null }, `the calendar holds no task (VTODO)${skipped.size ? `, only ${[...skipped].map(([k, n]) => `${n} ${k}`).join(', ')}` : ''}`);
}
