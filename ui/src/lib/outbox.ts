import { createEffect, createRoot, createSignal } from 'solid-js';
import { createStore, get as idbGet, set as idbSet } from 'idb-keyval';
import { api, ApiError, newKey, type Req } from './api.ts';
import { setOverlay } from './cache.ts';
import { connection } from './connection.ts';
import { session } from './session.ts';
import type { Task } from './types.ts';

/**
 * The write queue (issue 55). A change made without a connection (create, complete, edit, snooze,
 * delete) is kept in IndexedDB, so a reload or a closed tab loses nothing, shown as "n changes
 * waiting", and sent when the connection returns: in the order made, one at a time, each with the
 * Idempotency-Key chosen when the person made the change, so a request whose answer was lost is sent
 * again without doing the change twice (no second task, no coins paid twice).
 *
 * Conflicts (docs/ui.md): an offline edit remembers the values it changed from. If the server's value
 * of a field differs from that when the edit is sent, someone changed that field meanwhile: the
 * server's value stays (that field of the edit is dropped) and a notice says so; the edit's other
 * fields are applied. A change the server refuses (the task was deleted meanwhile, 404; already
 * completed, 409) is dropped with a notice. Nothing is dropped silently.
 */
export interface Entry {
  /** the Idempotency-Key, chosen when the change was made */
  key: string;
  method: 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** the URL, params and query filled in */
  path: string;
  body?: unknown;
  /** what the change is, for notices ("Complete "Buy milk"") */
  label: string;
  /** whose change it is: sent only while that user is signed in */
  user: string;
  /** PATCH: the values the edited fields had when the change was made (for the conflict rule) */
  base?: Record<string, unknown>;
  /** a task created offline: the id it goes by until the server gives it one */
  localId?: string;
}

interface Saved {
  entries: Entry[];
  /** local id → the server's id, for changes queued against a task created offline */
  ids: Record<string, string>;
}

export type Sent<T> = { queued: false; value: T } | { queued: true; localId?: string };

const store = createStore('tasksvc-outbox', 'outbox');
const LOCAL = 'local-';

const box = createRoot(() => {
  const [saved, setSaved] = createSignal<Saved>({ entries: [], ids: {} });
  const [notices, setNotices] = createSignal<string[]>([]);
  const [sending, setSending] = createSignal(false);
  const loaded = idbGet<Saved>('outbox', store).then(
    (v) => v && setSaved(v),
    () => undefined,
  );
  // Back online, signed in, or loaded with changes from before a reload: send what waits.
  createEffect(() => {
    if (connection.online() && session.ready() && saved().entries.length > 0) void replay();
  });
  return { saved, setSaved, notices, setNotices, sending, setSending, loaded };
});

/** Every change is on disk before the person is told it is queued. */
async function commit(next: Saved): Promise<void> {
  box.setSaved(next);
  await idbSet('outbox', next, store);
}

const mine = () => box.saved().entries.filter((e) => e.user === session.ready());

/** Changes of the signed-in user that wait for the connection. */
export const waiting = (): number => mine().length;
/** What the server refused or overruled while queued changes were sent (shown until dismissed). */
export const notices = (): string[] => box.notices();
export const dismissNotices = (): void => void box.setNotices([]);

const notify = (text: string) => box.setNotices((n) => [...n, text]);

/** A path with a task created offline in it, given the server's id once that is known. */
function resolve(path: string, ids: Record<string, string>): string {
  return path.replace(/local-[0-9a-f-]+/g, (id) => ids[id] ?? id);
}

const reachedNoServer = (err: unknown) => err instanceof ApiError && (err.unreachable || err.status >= 500 || err.status === 429 || (err.status === 409 && err.retryAfter !== undefined));
/** Signed out, or the second factor asked for again: the change waits for the person to sign in. */
const notSignedIn = (err: unknown) => err instanceof ApiError && (err.status === 401 || err.code === 'SECOND_FACTOR_REQUIRED');

/**
 * Send a change now, or queue it when there is no connection (or earlier changes still wait, so the
 * order holds). Errors the server answered are thrown as usual. The change is built by `request()`
 * (lib/api.ts), so its body is checked against the route.
 */
export async function write<T>(req: Req<T, Entry['method']>, opts: { label: string; base?: Record<string, unknown> }): Promise<Sent<T>> {
  await box.loaded;
  const { method, url: path, body } = req;
  const user = session.ready();
  const key = newKey();
  const entry: Entry = { key, method, path, body, label: opts.label, user: user || '', ...(opts.base ? { base: opts.base } : {}) };
  const real = resolve(path, box.saved().ids);
  if (user && connection.online() && mine().length === 0 && !real.includes(LOCAL)) {
    try {
      return { queued: false, value: await api({ ...req, url: real }, key) };
    } catch (err) {
      // No answer: it may or may not have arrived; sent again later with the same key, it counts once.
      if (!reachedNoServer(err)) throw err;
    }
  }
  if (method === 'POST' && path === '/api/tasks') entry.localId = `${LOCAL}${key}`;
  await commit({ ...box.saved(), entries: [...box.saved().entries, entry] });
  void replay();
  return { queued: true, ...(entry.localId ? { localId: entry.localId } : {}) };
}

let retryTimer: ReturnType<typeof setTimeout> | undefined;

/** Send the waiting changes, oldest first; stops at the first that gets no answer (tried again later). */
export async function replay(): Promise<void> {
  await box.loaded;
  if (box.sending()) return;
  box.setSending(true);
  let sent = 0;
  try {
    for (;;) {
      const e = mine()[0];
      if (!e || !connection.online()) break;
      try {
        await send(e);
      } catch (err) {
        if (reachedNoServer(err)) {
          // The server is down or busy (or the connection went): try again shortly, in the same order.
          clearTimeout(retryTimer);
          retryTimer = setTimeout(() => void replay(), Math.max(1, (err as ApiError).retryAfter ?? 3) * 1000);
          break;
        }
        if (notSignedIn(err)) break;
        notify(`Not saved: ${e.label}. ${(err as Error).message}`);
      }
      sent++;
      await commit({ ...box.saved(), entries: box.saved().entries.filter((x) => x.key !== e.key) });
    }
  } finally {
    box.setSending(false);
    // The screens load afresh: what they show comes from the server again, not from the queue.
    if (sent > 0) connection.reload();
  }
}

async function send(e: Entry): Promise<void> {
  const ids = box.saved().ids;
  const path = resolve(e.path, ids);
  if (path.includes(LOCAL)) throw new ApiError(404, 'NOT_FOUND', 'the task it belongs to was not saved');
  let body = e.body;
  if (e.method === 'PATCH' && e.base && path.startsWith('/api/tasks/')) {
    body = await merge(e, path);
    if (body === undefined) return;
  }
  // Sent as it was checked when queued (request() in write()): only the URL's ids may have changed.
  const answer = await api<{ task?: { id: string } }>({ method: e.method, url: path, body }, e.key);
  if (e.localId && answer?.task?.id) await commit({ ...box.saved(), ids: { ...box.saved().ids, [e.localId]: answer.task.id } });
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The conflict rule: fields changed on the server since the edit was made keep the server's value. */
async function merge(e: Entry, path: string): Promise<Record<string, unknown> | undefined> {
  const { task } = await api<{ task: Record<string, unknown> }>({ method: 'GET', url: path });
  const body = e.body as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  const overruled: string[] = [];
  for (const [k, v] of Object.entries(body)) {
    if (k in e.base! && !same(task[k], e.base![k]) && !same(task[k], v)) overruled.push(k);
    else kept[k] = v;
  }
  if (overruled.length) notify(`"${String(task.title)}" was changed elsewhere while you were offline: its ${overruled.map(fieldName).join(', ')} kept the other change, not yours.`);
  return Object.keys(kept).length ? kept : undefined;
}

const FIELD_NAMES: Record<string, string> = { dueDate: 'due date', dueTime: 'time', topicId: 'topic', estimatedMinutes: 'estimate', energyLevel: 'energy level', coinValue: 'coins' };
const fieldName = (k: string) => FIELD_NAMES[k] ?? k.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`);

/** A task created offline as lists show it until the server has it. */
function localTask(e: Entry): Task {
  const now = new Date().toISOString();
  const b = e.body as Partial<Task>;
  return {
    id: e.localId!,
    userId: e.user,
    topicId: null,
    parentId: null,
    subtaskCount: 0,
    subtasksDone: 0,
    title: '',
    notes: null,
    type: 'ONE_TIME',
    priority: 'NORMAL',
    recurrenceType: null,
    recurrenceInterval: null,
    recurrenceWeekdays: null,
    recurrenceWeekOfMonth: null,
    recurrenceFixed: true,
    dueDate: null,
    dueTime: null,
    reminders: [],
    nextDueDate: b.type === 'RECURRING' ? (b.dueDate ?? null) : null,
    completedAt: null,
    snoozedUntil: null,
    pausedAt: null,
    pausedUntil: null,
    postponeCount: 0,
    estimatedMinutes: null,
    energyLevel: null,
    sortOrder: 0,
    coinValue: 10,
    isDailyQuest: false,
    dailyQuestDate: null,
    blocked: false,
    createdAt: now,
    updatedAt: now,
    ...b,
  };
}

/**
 * Task lists as they will be once the waiting changes are sent: created tasks appear, completed and
 * deleted ones leave, edits and snoozes show. Only the list filters the screens use are applied.
 */
async function overlay(path: string, data: unknown): Promise<unknown> {
  await box.loaded;
  const entries = mine();
  const [base, query = ''] = path.split('?');
  const q = new URLSearchParams(query);
  // A topic's page lists its tasks too.
  const topicPage = /^\/api\/topics\/([^/]+)$/.exec(base!);
  if (topicPage) q.set('topicId', topicPage[1]!);
  if ((base !== '/api/tasks' && !topicPage) || entries.length === 0) return data;
  const ids = box.saved().ids;
  let tasks = [...(data as { tasks: Task[] }).tasks];
  const find = (id: string) => tasks.findIndex((t) => t.id === id || t.id === ids[id]);
  for (const e of entries) {
    if (e.method === 'POST' && e.path === '/api/tasks') {
      tasks.push(localTask(e));
      continue;
    }
    const m = /^\/api\/tasks\/([^/]+)(\/complete|\/snooze)?$/.exec(e.path);
    const i = m ? find(m[1]!) : -1;
    if (!m || i < 0) continue;
    const t = tasks[i]!;
    const action = `${e.method} ${m[2] ?? ''}`;
    if (action === 'DELETE ' || (action === 'POST /complete' && t.type !== 'RECURRING')) tasks.splice(i, 1);
    else if (action === 'PATCH ') tasks[i] = { ...t, ...(e.body as Partial<Task>) };
    else if (action === 'POST /snooze') tasks[i] = { ...t, ...(e.body as Partial<Task>) };
    else if (action === 'DELETE /snooze') tasks[i] = { ...t, snoozedUntil: null };
  }
  // The screens' filters, for what changed here.
  const due = (t: Task) => (t.type === 'RECURRING' ? t.nextDueDate : t.dueDate);
  const dueBefore = q.get('dueBefore');
  const topic = q.get('topicId');
  tasks = tasks.filter(
    (t) =>
      (q.get('completed') !== 'true' || t.completedAt) &&
      (!dueBefore || (due(t) !== null && due(t)! <= dueBefore)) &&
      (!topic || (topic === 'none' ? t.topicId === null : t.topicId === topic)) &&
      (!q.get('priority') || t.priority === q.get('priority')) &&
      (!q.get('type') || t.type === q.get('type')) &&
      (q.get('snoozed') !== 'false' || !t.snoozedUntil || t.snoozedUntil <= (dueBefore ?? '')),
  );
  return { ...(data as object), tasks };
}
setOverlay(overlay);
