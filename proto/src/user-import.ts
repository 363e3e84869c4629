import { z } from 'zod';
import { defineRpc } from './bus.ts';
import { defineRoute, storedId, uploadChunk, uploadChunkAck, uploadRef, type AnyRoute } from './http.ts';
import { RECURRENCE_TYPES } from './calendar/recurrence.ts';
import { IMPORT_FORMATS, IMPORT_LIMITS } from './import-formats.ts';

export { IMPORT_FORMATS, IMPORT_FORMAT_LABELS, IMPORT_LIMITS, type ImportFormat } from './import-formats.ts';

/**
 * Import of a person's tasks from another app or from this one's export (docs/moving.md):
 * upload → preview → confirm → progress → result. Nothing is written before the confirm; the confirm
 * runs in the background and is atomic (all or nothing); progress is polled with GET.
 */

export const importFormat = z.enum(IMPORT_FORMATS);

export const IMPORT_STATUSES = ['previewed', 'running', 'done', 'failed', 'cancelled', 'expired'] as const;
export const importStatus = z.enum(IMPORT_STATUSES);
export type ImportStatus = z.infer<typeof importStatus>;

/** The kinds of things an import brings, each counted in the preview and the result. */
export const IMPORT_KINDS = ['topics', 'tasks', 'subtasks', 'completions', 'wishlistItems', 'energyCheckins', 'settings', 'progress'] as const;
export const importKind = z.enum(IMPORT_KINDS);
export type ImportKind = z.infer<typeof importKind>;

export const importCount = z.object({
  kind: importKind,
  /** new to this account: what the confirm adds */
  toImport: z.number().int(),
  /** brought by an earlier import of the same items (or already this account's own): not added again */
  alreadyImported: z.number().int(),
});
export type ImportCount = z.infer<typeof importCount>;

/** Where in the file(s) something is: the file (a ZIP's member), its 1-based row or line, the column or property. */
const location = {
  file: z.string(),
  row: z.number().int().nullable(),
  field: z.string().nullable(),
};

/**
 * A row (or part of one) that cannot come over as it is: `skipped` rows are not imported at all,
 * `changed` ones are imported without what the message names.
 */
export const importProblem = z.object({
  ...location,
  /** the item's title where it has one */
  title: z.string().nullable(),
  outcome: z.enum(['skipped', 'changed']),
  message: z.string(),
});
export type ImportProblem = z.infer<typeof importProblem>;

export const importedRule = z.object({
  type: z.enum(RECURRENCE_TYPES),
  interval: z.number().int(),
  weekdays: z.array(z.number().int()),
  weekOfMonth: z.number().int().nullable(),
  fixed: z.boolean(),
});

/** How one repeating item of the file became (or could not become) a recurrence here. */
export const importRecurrence = z.object({
  ...location,
  title: z.string(),
  /** the repetition as the file says it: a Todoist DATE phrase, an RRULE… */
  source: z.string(),
  /** mapped: `rule` repeats exactly as the source; not-expressible: imported without repeating (see the message) */
  outcome: z.enum(['mapped', 'not-expressible']),
  rule: importedRule.nullable(),
  /** in words: "every week on Monday", or why it cannot be expressed */
  message: z.string(),
});
export type ImportRecurrence = z.infer<typeof importRecurrence>;

/** A list that may be long: its size and its first entries (the rest: the list's own route, paged). */
const page = <T extends z.ZodType>(item: T) => z.object({ total: z.number().int(), items: z.array(item) });

export const importView = z.object({
  id: storedId,
  status: importStatus,
  format: importFormat,
  fileName: z.string(),
  bytes: z.number().int(),
  /** the files read (a ZIP's members) */
  files: z.array(z.string()),
  createdAt: z.string(),
  /** a preview not confirmed by then is dropped */
  expiresAt: z.string(),
  preview: z.object({
    counts: z.array(importCount),
    problems: page(importProblem),
    recurrences: page(importRecurrence),
  }),
  /** while running (and after): items written so far of all */
  progress: z.object({ done: z.number().int(), total: z.number().int() }),
  /** done: what was added */
  result: z.object({ counts: z.array(importCount), finishedAt: z.string() }).nullable(),
  /** failed: why; nothing was written */
  error: z.string().nullable(),
});
export type ImportView = z.infer<typeof importView>;

/** Entries of a long list shown with the preview at most; the rest are paged through the list's route. */
export const IMPORT_PREVIEW_LIST = 200;

const idParam = z.object({ id: z.uuid() }).strict();
const uploadQuery = z
  .object({
    /** the file's name as the person knows it (shown in the preview and in error messages); default `upload` */
    filename: z.string().trim().min(1).max(255).optional(),
  })
  .strict();
const pageQuery = z
  .object({
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    limit: z.coerce.number().int().min(1).max(1000).default(IMPORT_PREVIEW_LIST),
  })
  .strict();

export const importReply = z.object({ import: importView });
export const importProblemsReply = page(importProblem);
export const importRecurrencesReply = page(importRecurrence);

/** The bus request that carries each piece of an upload (see UploadSpec) to the tasks service. */
export const importChunkRpc = defineRpc('tasks.import.chunk', uploadChunk, uploadChunkAck);

const TAG = 'Import';

export const importApi = {
  upload: defineRoute({
    method: 'POST',
    path: '/api/user/import',
    auth: 'user',
    subject: 'tasks.http.import.upload',
    query: uploadQuery,
    body: uploadRef,
    upload: { maxBytes: IMPORT_LIMITS.maxBytes, chunk: importChunkRpc },
    response: importReply,
    summary: 'Upload a file to import (the raw file as the body, any Content-Type); answers its preview. Nothing is written until it is confirmed',
    tag: TAG,
  }),
  get: defineRoute({ method: 'GET', path: '/api/user/import/:id', auth: 'user', subject: 'tasks.http.import.get', params: idParam, response: importReply, summary: 'An import: its preview, status, progress and result', tag: TAG }),
  problems: defineRoute({ method: 'GET', path: '/api/user/import/:id/problems', auth: 'user', subject: 'tasks.http.import.problems', params: idParam, query: pageQuery, response: importProblemsReply, summary: 'Every row of the preview that cannot be imported as it is, paged', tag: TAG }),
  recurrences: defineRoute({ method: 'GET', path: '/api/user/import/:id/recurrences', auth: 'user', subject: 'tasks.http.import.recurrences', params: idParam, query: pageQuery, response: importRecurrencesReply, summary: 'How each repeating item of the preview was mapped, paged', tag: TAG }),
  confirm: defineRoute({ method: 'POST', path: '/api/user/import/:id/confirm', auth: 'user', subject: 'tasks.http.import.confirm', params: idParam, body: z.object({}).strict().optional(), response: importReply, status: 202, summary: 'Confirm a preview: the import runs in the background, all or nothing (poll GET for progress)', tag: TAG }),
  cancel: defineRoute({ method: 'DELETE', path: '/api/user/import/:id', auth: 'user', subject: 'tasks.http.import.cancel', params: idParam, response: importReply, summary: 'Drop a preview and its file (nothing was imported)', tag: TAG }),
};

export const importRoutes: AnyRoute[] = Object.values(importApi);
