import { parse } from 'csv-parse/sync';
import { unzipSync } from 'fflate';
import { IMPORT_LIMITS } from '@tasksvc/proto';
import { startSchedule } from '@tasksvc/proto/calendar/recurrence.ts';
import type { ReadContext } from './context.ts';
import { digestKey, fileError, ImportFileError, plannedTask, uniqueKeys, type ImportPlan, type PlannedTask, type Priority, type SourceLocation } from './plan.ts';
import { decodeText } from './text.ts';

/**
 * Todoist's project export (one CSV per project) and its backup (a ZIP of such CSVs), read from
 * Todoist's published template format: a header row, then one row per item with TYPE `task`,
 * `section`, `note` (a comment on the task above) or `meta` (the project's view settings).
 *
 * - PRIORITY 4 is Todoist's highest (p1): 4 and 3 → HIGH, 2 and 1 → NORMAL.
 * - INDENT 1 is a task, 2 its subtask; deeper levels become subtasks of their top-level task (one
 *   level here), reported.
 * - DATE is read with quick add's grammar (the shared phrase parser): `every monday`, `every! 3 days`
 *   (counted from completion), `Jan 15`, `tomorrow at 9am`. Todoist's `every` counts on the schedule,
 *   so such rules are schedule-based here too. A phrase not understood is reported, never guessed.
 * - A project is a topic (its Inbox is no topic); a section is the topic "Project / Section".
 * - DURATION with DURATION_UNIT `minute` (or `day`) → the estimate (at most a day here).
 * Todoist's CSV has no ids: a task's source key is made from its project, section, parent and text.
 */

/** The columns read (Todoist also writes AUTHOR, RESPONSIBLE and TIMEZONE: people and zones of a shared project, not kept); TYPE and CONTENT are needed. */
type Column = 'TYPE' | 'CONTENT' | 'DESCRIPTION' | 'PRIORITY' | 'INDENT' | 'DATE' | 'DATE_LANG' | 'DURATION' | 'DURATION_UNIT' | 'DEADLINE';

/** Whether a CSV's first line looks like a Todoist export's header. */
export function looksLikeTodoistCsv(text: string): boolean {
  const first = text.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0] ?? '';
  const cells = first.split(',').map((c) => c.trim().replace(/^"|"$/g, '').toUpperCase());
  return cells.includes('TYPE') && cells.includes('CONTENT');
}

/** A project's name and key from its file name: `Work.csv`, `Work [2203306141].csv` (the id wins as key). */
export function projectOf(fileName: string): { name: string; key: string } {
  const base = fileName.split('/').pop()!.replace(/\.csv$/i, '');
  const m = /^(.*?)\s*\[(\d+)\]$/.exec(base);
  const name = (m ? m[1]! : base).trim() || 'Todoist';
  return { name, key: m ? `id:${m[2]}` : `name:${name.toLowerCase()}` };
}

const PRIORITY: Record<string, Priority> = { '4': 'HIGH', '3': 'HIGH', '2': 'NORMAL', '1': 'NORMAL', '': 'NORMAL' };
const RECURRING_WORDS = /\b(every|each|daily|weekly|monthly|yearly|annually|weekdays|weekends)\b/i;

/** Read one Todoist project CSV into the plan. */
export function readTodoistCsv(fileName: string, text: string, ctx: ReadContext, plan: ImportPlan, items: { count: number }): void {
  const at = (row: number | null, field: Column | null): SourceLocation => ({ file: fileName, row, field });
  let records: string[][];
  try {
    records = parse(text, { bom: true, relax_column_count: true, skip_empty_lines: false });
  } catch (err) {
    const e = err as Error & { code?: string; lines?: number; records?: number };
    const truncated = e.code === 'CSV_QUOTE_NOT_CLOSED' ? ' — the file ends inside a quoted value: is it truncated?' : '';
    throw fileError(at((e.records ?? 0) + 1, null), `not a readable CSV file (${e.message})${truncated}`);
  }
  const header = (records[0] ?? []).map((h) => h.trim().toUpperCase());
  const col = new Map<string, number>(header.map((h, i) => [h, i]));
  if (!col.has('TYPE') || !col.has('CONTENT')) throw fileError(at(1, null), 'not a Todoist CSV export: its first row must name the columns, TYPE and CONTENT among them');

  // an export repeats its few date phrases over and over: each is read once per file
  const readings = new Map<string, ReturnType<ReadContext['when']>>();
  const when: ReadContext['when'] = (phrase, c) => {
    let r = readings.get(phrase);
    if (!r) readings.set(phrase, (r = ctx.when(phrase, c)));
    return r;
  };
  const project = projectOf(fileName);
  const inbox = project.name.toLowerCase() === 'inbox';
  const unique = uniqueKeys();
  let section: string | null = null;
  /** the last task of each indent level, for parents */
  const lastAt: PlannedTask[] = [];
  let previous: PlannedTask | null = null;

  const topicKeyFor = (sec: string | null): string | null => {
    if (!sec && inbox) return null;
    const key = `todoist:topic:${project.key}${sec ? `/${sec.toLowerCase()}` : ''}`;
    if (!plan.topics.some((t) => t.key === key)) {
      const title = sec ? (inbox ? sec : `${project.name} / ${sec}`) : project.name;
      plan.topics.push({ key, at: at(null, null), title, description: null, color: null, icon: null, priority: 'NORMAL', archived: false, sequential: false, defaultEnergyLevel: null });
    }
    return key;
  };

  for (let i = 1; i < records.length; i++) {
    const cells = records[i]!;
    const row = i + 1; // the header is row 1, as a spreadsheet shows it
    if (cells.every((c) => c.trim() === '')) continue;
    if (cells.length !== header.length) {
      throw fileError(at(row, null), `the row has ${cells.length} values where the header names ${header.length} columns: the file is broken or truncated`);
    }
    if (++items.count > ctx.maxItems) throw fileError(at(row, null), `more than ${ctx.maxItems.toLocaleString('en')} rows in one import: split the file`);
    const get = (c: Column) => (col.has(c) ? cells[col.get(c)!]!.trim() : '');
    const type = get('TYPE').toLowerCase();
    const content = get('CONTENT');
    if (type === 'section') {
      section = content || null;
      lastAt.length = 0;
      previous = null;
      continue;
    }
    if (type === 'meta') {
      plan.problems.push({ ...at(row, 'TYPE'), title: null, outcome: 'skipped', message: `Todoist's view setting "${content}" (a meta row) has no counterpart here` });
      continue;
    }
    if (type === 'note') {
      if (!previous) {
        plan.problems.push({ ...at(row, 'TYPE'), title: null, outcome: 'skipped', message: 'a comment (note row) with no task above it' });
        continue;
      }
      const comment = [content, get('DESCRIPTION')].filter(Boolean).join('\n');
      previous.notes = previous.notes ? `${previous.notes}\n\n— ${comment}` : `— ${comment}`;
      continue;
    }
    if (type !== 'task') {
      plan.problems.push({ ...at(row, 'TYPE'), title: content || null, outcome: 'skipped', message: `unknown row type "${get('TYPE')}": only task, section, note and meta rows are known` });
      continue;
    }

    const priorityText = get('PRIORITY');
    const priority = PRIORITY[priorityText];
    if (!priority) throw fileError(at(row, 'PRIORITY'), `"${priorityText}" is not a Todoist priority (1 to 4, 4 the highest)`);
    const indentText = get('INDENT') || '1';
    const indent = Number(indentText);
    if (!Number.isInteger(indent) || indent < 1 || indent > 10) throw fileError(at(row, 'INDENT'), `"${indentText}" is not an indent level (1 for a task, 2 for its subtask…)`);

    let parent: PlannedTask | null = null;
    if (indent > 1) {
      parent = lastAt[0] ?? null;
      if (!parent) plan.problems.push({ ...at(row, 'INDENT'), title: content, outcome: 'changed', message: `indented (INDENT ${indent}) with no task above it: imported as a task of its own` });
      else if (indent > 2) plan.problems.push({ ...at(row, 'INDENT'), title: content, outcome: 'changed', message: `nested ${indent - 1} levels deep: made a subtask of "${parent.title}" (subtasks here have one level)` });
    }
    const topicKey = topicKeyFor(section);
    const key = unique(digestKey('todoist', project.key, section ?? '', parent?.title ?? '', content, get('DESCRIPTION')));
    const task = plannedTask(key, at(row, 'CONTENT'), content, {
      notes: get('DESCRIPTION') || null,
      priority,
      topicKey,
      parentKey: parent?.key ?? null,
    });
    readDate(task, get('DATE'), get('DATE_LANG'), at(row, 'DATE'), { ...ctx, when }, plan);
    readDuration(task, get('DURATION'), get('DURATION_UNIT'), row, fileName, plan);
    const deadline = get('DEADLINE');
    if (deadline) plan.problems.push({ ...at(row, 'DEADLINE'), title: content, outcome: 'changed', message: `the deadline "${deadline}" is not kept (tasks here have one due date)` });
    plan.tasks.push(task);
    previous = task;
    if (indent === 1) lastAt.length = 0;
    lastAt[Math.min(indent, 2) - 1] = task;
  }
}

/** DATE → due date, time and repetition, through quick add's grammar. */
function readDate(task: PlannedTask, phrase: string, lang: string, at: SourceLocation, ctx: ReadContext, plan: ImportPlan): void {
  if (!phrase) return;
  const rolling = /\bevery!/i.test(phrase);
  const r = ctx.when(phrase, { today: ctx.today, timeZone: ctx.timeZone });
  const recurring = RECURRING_WORDS.test(phrase) || rolling;
  const language = lang && lang.toLowerCase() !== 'en' ? ` (Todoist wrote it in "${lang}"; dates are read in English)` : '';
  if (!r.ok || (recurring && !r.recurrence)) {
    const words = r.notUnderstood.length > 0 ? ` ("${r.notUnderstood.join('", "')}" not understood)` : '';
    if (recurring) {
      plan.recurrences.push({ ...at, title: task.title, source: phrase, outcome: 'not-expressible', rule: null, message: `cannot be expressed here${words}${language}: imported without a date or repetition` });
    } else {
      plan.problems.push({ ...at, title: task.title, outcome: 'changed', message: `the date "${phrase}" is not understood${words}${language}: imported without a date` });
    }
    return;
  }
  if (r.dueTime) {
    if (ctx.dueTime) task.dueTime = r.dueTime;
    else plan.problems.push({ ...at, title: task.title, outcome: 'changed', message: `the time of day ${r.dueTime} is not kept (tasks here have a due date only)` });
  }
  if (r.recurrence) {
    const rule = { ...r.recurrence, fixed: !rolling };
    const state = startSchedule(rule, r.dueDate ?? ctx.today);
    task.type = 'RECURRING';
    task.rule = rule;
    task.anchor = state.anchor;
    task.nextDueDate = state.nextDueDate;
    task.dueDate = state.nextDueDate;
    const counted = rolling ? ', counted from each completion' : '';
    plan.recurrences.push({ ...at, title: task.title, source: phrase, outcome: 'mapped', rule, message: `${ctx.describe(rule, state.nextDueDate)}${counted}; next due ${state.nextDueDate}` });
    return;
  }
  task.dueDate = r.dueDate;
}

function readDuration(task: PlannedTask, amountText: string, unitText: string, row: number, file: string, plan: ImportPlan): void {
  if (!amountText) return;
  const amount = Number(amountText);
  const unit = unitText.toLowerCase() || 'minute';
  if (!Number.isFinite(amount) || amount < 0 || (unit !== 'minute' && unit !== 'day')) {
    throw fileError({ file, row, field: Number.isFinite(amount) && amount >= 0 ? 'DURATION_UNIT' : 'DURATION' }, `"${amountText} ${unitText}" is not a duration (a number of minutes or days)`);
  }
  const minutes = Math.round(unit === 'day' ? amount * 1440 : amount);
  if (minutes < 1) return;
  if (minutes > 1440) {
    plan.problems.push({ file, row, field: 'DURATION', title: task.title, outcome: 'changed', message: `the duration of ${amountText} ${unit}s is longer than the longest estimate here (a day): estimated at a day` });
    task.estimatedMinutes = 1440;
    return;
  }
  task.estimatedMinutes = minutes;
}

/** A Todoist backup: a ZIP whose members are project CSVs. */
export function readTodoistZip(fileName: string, bytes: Uint8Array, ctx: ReadContext, plan: ImportPlan, items: { count: number }): void {
  const whole = { file: fileName, row: null, field: null };
  let members: Record<string, Uint8Array>;
  let declared = 0;
  let count = 0;
  try {
    members = unzipSync(bytes, {
      filter: (f) => {
        if (f.name.endsWith('/') || f.name.startsWith('__MACOSX/')) return false;
        if (++count > IMPORT_LIMITS.maxFiles) throw new ImportFileError([{ ...whole, message: `more than ${IMPORT_LIMITS.maxFiles} files in the ZIP` }]);
        declared += f.originalSize;
        if (declared > IMPORT_LIMITS.maxUnpackedBytes) throw new ImportFileError([{ ...whole, message: `the ZIP unpacks to more than ${IMPORT_LIMITS.maxUnpackedBytes / 1024 / 1024} MiB` }]);
        return true;
      },
    });
  } catch (err) {
    if (err instanceof ImportFileError) throw err;
    throw fileError(whole, `not a readable ZIP archive (${(err as Error).message}): is it truncated?`);
  }
  const names = Object.keys(members).sort((a, b) => a.localeCompare(b));
  let csvs = 0;
  for (const name of names) {
    const member = `${fileName}/${name}`;
    if (!/\.csv$/i.test(name)) {
      plan.problems.push({ file: member, row: null, field: null, title: null, outcome: 'skipped', message: 'not a CSV file: a Todoist backup holds one CSV per project' });
      continue;
    }
    const text = decodeText(member, members[name]!);
    if (!looksLikeTodoistCsv(text)) throw fileError({ file: member, row: 1, field: null }, 'not a Todoist CSV export: its first row must name the columns, TYPE and CONTENT among them');
    plan.files.push(member);
    csvs++;
    // the project is the member's own name; errors name the member within the ZIP
    readTodoistCsv(member, text, ctx, plan, items);
  }
  if (csvs === 0) throw fileError(whole, 'the ZIP holds no CSV file: a Todoist backup holds one CSV per project');
}
