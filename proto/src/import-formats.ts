/**
 * Facts of the import that the UI needs too, without zod (the UI bundles this file as it is): the
 * formats, their names, the limits. The contract itself is user-import.ts.
 */

/** Every format the import reads, each recognised from the file's content (never from its name alone). */
export const IMPORT_FORMATS = ['tasksvc', 'reference', 'todoist-csv', 'todoist-zip', 'icalendar'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** How each format is named to a person. */
export const IMPORT_FORMAT_LABELS: Record<ImportFormat, string> = {
  tasksvc: 'Task Service export',
  reference: 'Momo export',
  'todoist-csv': 'Todoist project (CSV)',
  'todoist-zip': 'Todoist backup (ZIP of CSVs)',
  icalendar: 'iCalendar tasks (VTODO)',
};

/** The limits of one import (docs/api.md): a larger file is 413, more items 400 naming where they were crossed. */
export const IMPORT_LIMITS = {
  /** the uploaded file */
  maxBytes: 16 * 1024 * 1024,
  /** all members of a ZIP together, unpacked */
  maxUnpackedBytes: 64 * 1024 * 1024,
  /** members of a ZIP */
  maxFiles: 500,
  /** rows, components or records read from the file(s) */
  maxItems: 50_000,
  /** a preview waits this long for its confirm, then it and its file are dropped */
  previewHours: 24,
} as const;

