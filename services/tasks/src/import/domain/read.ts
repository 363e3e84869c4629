import type { ReadContext } from './context.ts';
import { emptyPlan, fileError, fitToModel, type ImportPlan } from './plan.ts';
import { readIcs } from './ics.ts';
import { isOwnExport, readOwnExport } from './own.ts';
import { isReferenceExport, readReferenceExport } from './reference.ts';
import { decodeText } from './text.ts';
import { looksLikeTodoistCsv, readTodoistCsv, readTodoistZip } from './todoist.ts';

/**
 * One uploaded file → its import plan. The format is recognised from the content (a ZIP's
 * signature, a JSON document's keys, iCalendar's BEGIN:VCALENDAR, Todoist's CSV header), never from
 * the name. A file that cannot be read throws ImportFileError naming file, row and field.
 */
export function readImport(fileName: string, bytes: Uint8Array, ctx: ReadContext): ImportPlan {
  const items = { count: 0 };
  const whole = { file: fileName, row: null, field: null };
  if (bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && (bytes[2] === 0x03 || bytes[2] === 0x05)) {
    const plan = emptyPlan('todoist-zip', []);
    readTodoistZip(fileName, bytes, ctx, plan, items);
    return finish(plan, ctx);
  }
  const text = decodeText(fileName, bytes);
  const start = text.trimStart();
  if (start.startsWith('{') || start.startsWith('[')) {
    const doc = parseJson(fileName, text);
    if (isOwnExport(doc)) {
      const plan = emptyPlan('tasksvc', [fileName]);
      readOwnExport(fileName, doc as Record<string, unknown>, ctx, plan, items);
      return finish(plan, ctx);
    }
    if (isReferenceExport(doc)) {
      const plan = emptyPlan('reference', [fileName]);
      readReferenceExport(fileName, doc as Record<string, unknown>, ctx, plan, items);
      return finish(plan, ctx);
    }
    throw fileError(whole, 'a JSON file that is neither a Task Service export nor a Momo export: no format to read it as');
  }
  if (/^BEGIN:VCALENDAR/i.test(start)) {
    const plan = emptyPlan('icalendar', [fileName]);
    readIcs(fileName, text, ctx, plan, items);
    return finish(plan, ctx);
  }
  if (looksLikeTodoistCsv(text)) {
    const plan = emptyPlan('todoist-csv', [fileName]);
    readTodoistCsv(fileName, text, ctx, plan, items);
    return finish(plan, ctx);
  }
  throw fileError(whole, 'not a format this import reads: expected a Task Service or Momo export (JSON), a Todoist CSV or backup ZIP, or an iCalendar file with tasks (.ics)');
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    // V8 names the position: "… in JSON at position 1234 (line 40 column 3)"
    const m = /line (\d+) column (\d+)/.exec((err as Error).message);
    const truncated = /end of (JSON|data) input|Unterminated/i.test((err as Error).message) ? ': the file ends early — is it truncated?' : '';
    throw fileError({ file, row: m ? Number(m[1]) : null, field: null }, `not valid JSON (${(err as Error).message})${truncated}`);
  }
}

/** The plan fitted to the model, and subtasks flattened (reported) where tasks here have no parent. */
function finish(plan: ImportPlan, ctx: ReadContext): ImportPlan {
  // subtasks here have one level: a deeper one hangs on its top-level task (reported)
  const byKey = new Map(plan.tasks.map((t) => [t.key, t]));
  for (const t of plan.tasks) {
    let root = t.parentKey ? byKey.get(t.parentKey) : undefined;
    if (!root?.parentKey) continue;
    const seen = new Set([t.key]);
    while (root.parentKey && byKey.has(root.parentKey) && !seen.has(root.key)) {
      seen.add(root.key);
      root = byKey.get(root.parentKey)!;
    }
    t.parentKey = root.key === t.key ? null : root.key;
    plan.problems.push({ ...t.at, title: t.title, outcome: 'changed', message: `nested more than one level deep: made a subtask of "${root.title}" (subtasks here have one level)` });
  }
  for (const t of plan.tasks) {
    if (!t.parentKey) continue;
    const parent = byKey.get(t.parentKey);
    const detach = (message: string) => {
      plan.problems.push({ ...t.at, title: t.title, outcome: 'changed', message });
      t.parentKey = null;
    };
    if (!parent) detach('its parent task is not imported with it: imported as a task of its own');
    else if (t.type === 'RECURRING') detach(`a subtask never repeats here: imported as a task of its own (not under "${parent.title}"), keeping its repetition`);
    else if (ctx.subtasks && t.topicKey !== parent.topicKey) {
      // a subtask is in its parent's topic
      const topic = (key: string | null) => plan.topics.find((x) => x.key === key)?.title ?? 'no topic';
      plan.problems.push({ ...t.at, title: t.title, outcome: 'changed', message: `a subtask is in its parent's topic here: in "${topic(parent.topicKey)}", not "${topic(t.topicKey)}"` });
      t.topicKey = parent.topicKey;
    }
  }
  if (!ctx.subtasks) {
    for (const t of plan.tasks) {
      if (!t.parentKey) continue;
      plan.problems.push({ ...t.at, title: t.title, outcome: 'changed', message: 'a subtask: this version has no subtasks, so it is imported as a task of its own' });
      t.parentKey = null;
    }
  }
  return fitToModel(plan);
}
