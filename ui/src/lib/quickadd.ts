/**
 * Quick add's side of the phrase parser (`proto/src/calendar/phrases.ts`, the one parser shared with
 * onboarding and the imports): the parse for the chips, and the create body it means.
 */
import { parseQuickAdd, type QuickAddParse } from '../../../proto/src/calendar/phrases.ts';
import type { BodyOf } from './api.ts';

/** What a create request may carry (the route's body, lib/api.ts). */
export type CreateTaskBody = BodyOf<'POST', '/api/tasks'>;

export type { QuickAddParse, PhrasePart, NotUnderstood } from '../../../proto/src/calendar/phrases.ts';

export interface QuickAddTopic {
  id: string;
  title: string;
}

/** The browser's zone: the profile's zone is the same unless the person set another in Settings. */
const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The create body a parse means (`topicId`: the list's topic, when the line names none). */
export function createBody(p: QuickAddParse, topicId?: string | null): CreateTaskBody {
  const body: CreateTaskBody = { title: p.title };
  const topic = p.topic?.id ?? topicId ?? undefined;
  if (topic) body.topicId = topic;
  if (p.priority) body.priority = p.priority;
  if (p.dueDate) body.dueDate = p.dueDate;
  if (p.recurrence) {
    body.type = 'RECURRING';
    body.recurrenceType = p.recurrence.type;
    body.recurrenceInterval = p.recurrence.interval;
    if (p.recurrence.weekdays.length > 0) body.recurrenceWeekdays = p.recurrence.weekdays;
    if (p.recurrence.weekOfMonth !== null) body.recurrenceWeekOfMonth = p.recurrence.weekOfMonth as 1 | 2 | 3 | 4 | -1;
    body.recurrenceFixed = p.recurrence.fixed;
  }
  if (p.dueDate && p.dueTime) body.dueTime = p.dueTime;
  if (p.reminders.length > 0) body.reminders = p.reminders;
  return body;
}

/** The parse of a typed line. */
export function parseLine(input: string, today: string, topics: QuickAddTopic[] = [], now = new Date()): QuickAddParse {
  return parseQuickAdd(input, { today, now, timeZone: browserZone(), topics });
}
