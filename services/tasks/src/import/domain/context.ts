import type { LocalDate } from '@tasksvc/proto/calendar/dates.ts';
import type { RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';

/** A date/recurrence phrase read alone (the shared phrase parser's `parseWhen`: quick add's grammar). */
export interface WhenReading {
  ok: boolean;
  dueDate: LocalDate | null;
  dueTime: string | null;
  recurrence: RecurrenceRule | null;
  notUnderstood: string[];
}

/** What the readers need to know besides the file: all of it given, so they stay pure. */
export interface ReadContext {
  /** the importing person's "today" (their zone): relative dates of a file ("tomorrow", "every monday") start here */
  today: LocalDate;
  /** the importing person's IANA zone: instants of a file become their calendar dates here */
  timeZone: string;
  /** the shared phrase parser (Todoist's DATE column) */
  when: (text: string, ctx: { today: LocalDate; timeZone: string }) => WhenReading;
  /** a rule in words, as quick add shows it */
  describe: (rule: RecurrenceRule, dueDate: LocalDate | null) => string;
  /** whether tasks here can have a parent (subtasks); without, subtasks of a file are reported */
  subtasks: boolean;
  /** whether tasks here have a time of day (`dueTime`); without, times of a file are reported */
  dueTime: boolean;
  /** rows, components or records read at most (IMPORT_LIMITS.maxItems) */
  maxItems: number;
}
