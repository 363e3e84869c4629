import ICAL from 'ical.js';
import { addDays, type LocalDate } from '@tasksvc/proto/calendar/dates.ts';
import type { RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';
import { clampedMonthEnds, dateValue, newCalendar, recurOf, serialize, taskUid, utcValue } from './icalendar.ts';

/**
 * The iCal feed (RFC 5545): every dated task as an all-day VEVENT; RECURRING tasks carry an
 * open-ended RRULE equal to their schedule (see recurrence.ts), starting at their next due date.
 * Tasks as VTODOs (CalDAV, the .ics export) are vtodo.ts's.
 */

export interface FeedTask {
  id: string;
  title: string;
  notes: string | null;
  priority: string;
  /** the date the event starts on (due date, or next due date of a RECURRING task) */
  date: LocalDate;
  /** RECURRING tasks: the rule and its anchor */
  recurrence: { rule: RecurrenceRule; anchor: LocalDate } | null;
  /** a subtask's parent (RELATED-TO;RELTYPE=PARENT names its UID, whether or not the parent is in the feed) */
  parentId: string | null;
  updatedAt: Date;
}

export function buildCalendar(tasks: FeedTask[], opts: { now: Date; name: string }): string {
  const cal = newCalendar({ method: 'PUBLISH', 'x-wr-calname': opts.name });
  const stamp = utcValue(opts.now);
  for (const t of tasks) {
    const ev = new ICAL.Component('vevent');
    ev.addPropertyWithValue('uid', taskUid(t.id));
    ev.addPropertyWithValue('dtstamp', stamp);
    ev.addPropertyWithValue('last-modified', utcValue(t.updatedAt));
    ev.addPropertyWithValue('dtstart', dateValue(t.date));
    ev.addPropertyWithValue('dtend', dateValue(addDays(t.date, 1)));
    ev.addPropertyWithValue('summary', t.title);
    if (t.notes) ev.addPropertyWithValue('description', t.notes);
    ev.addPropertyWithValue('priority', t.priority === 'HIGH' ? 1 : t.priority === 'NORMAL' ? 5 : 9);
    ev.addPropertyWithValue('transp', 'TRANSPARENT');
    if (t.parentId) ev.addPropertyWithValue('related-to', taskUid(t.parentId)).setParameter('reltype', 'PARENT');
    if (t.recurrence) {
      ev.addPropertyWithValue('rrule', recurOf(t.recurrence.rule, t.recurrence.anchor));
      const extra = clampedMonthEnds(t.recurrence.rule, t.recurrence.anchor, t.date).filter((d) => d !== t.date);
      if (extra.length > 0) {
        const rdate = new ICAL.Property('rdate');
        rdate.setValues(extra.map(dateValue));
        ev.addProperty(rdate);
      }
    }
    cal.addSubcomponent(ev);
  }
  return serialize(cal);
}
