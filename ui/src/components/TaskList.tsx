import { createMemo, createSignal, For, onCleanup, Show, type JSX } from 'solid-js';
import { ApiError, del, post, request } from '../lib/api.ts';
import { ask } from '../lib/confirm.ts';
import { write, type Sent } from '../lib/outbox.ts';
import { addDays, dueLabel, formatDate } from '../lib/dates.ts';
import { coinsGained, gameStats, refreshGame } from '../lib/game.ts';
import { shared } from '../lib/data.ts';
import { createBody, parseLine } from '../lib/quickadd.ts';
import { closeToast, holdToast, toast, toastError } from '../lib/toast.ts';
import type { CompleteTaskReply, Task, Topic } from '../lib/types.ts';
import { Empty } from './ui.tsx';
import { Icon } from './icons.tsx';
import { ActionsMenu, type MenuItem } from './Menu.tsx';
import { focusWhenPresent } from '../lib/focus.ts';
import { handOverDraft } from './quick-add-draft.ts';
import { PhraseChips, PhraseField } from './PhraseInput.tsx';
import { deleteWithUndo, isDeleted } from '../lib/undoable-delete.ts';
import { forget, holdCompleted, justCompleted, letGo } from '../lib/just-completed.ts';
import { isPaused, isSnoozed } from '../lib/task-groups.ts';
import type { Selection } from './BulkBar.tsx';

export interface TaskActions {
  /** called after any change so the owner can reload its list (resolves once reloaded) */
  changed: () => unknown;
  edit?: (t: Task) => void;
}

/** The row's own controls, found again after its list re-rendered it. */
const rowControl = (id: string, control: 'check' | 'menu') => `[data-task-id="${id}"] ${control === 'check' ? '.task-check' : '.menu-wrap > button'}`;

/** The control focus moves to when a row leaves the list: the next row's box, else the one before, else quick add. */
function neighbourOf(id: string): { selector: string } {
  const row = document.querySelector(`[data-task-id="${id}"]`);
  const next = (row?.nextElementSibling ?? row?.previousElementSibling)?.getAttribute('data-task-id');
  return { selector: next ? rowControl(next, 'check') : '#quick-add' };
}

/** Where focus goes once a row that is leaving (deleted, its Undo toast closed) is gone. */
function neighbourFocus(id: string): () => void {
  const { selector } = neighbourOf(id);
  return () => focusWhenPresent(selector);
}

/**
 * Complete a task. Its row stays where it is and as it was, ticked, with Undo right after its box
 * (lib/just-completed.ts), until its toast goes; only then does it leave the list (or show a
 * recurring task's next date). Focus stays on the box, so Undo is one Tab away; the toast says what
 * happened and offers Undo as well.
 */
async function complete(t: Task, actions: TaskActions): Promise<boolean> {
  const coinsBefore = gameStats()?.coins;
  try {
    const sent = await completeAsking(t);
    if (!sent) return false;
    if (sent.queued) {
      // Offline: the row leaves now; the coins come when the completion reaches the server.
      toast(`Completed "${t.title}" on this device · sent when you are online`);
      void actions.changed();
      return true;
    }
    const r = sent.value;
    refreshGame();
    const coins = `+${coinsGained(r, coinsBefore)} coins`;
    const withParent = r.parent?.completed ? ` and "${r.parent.task.title}" (all its steps are done)` : '';
    const text = t.type === 'RECURRING' ? `Done: "${t.title}" next on ${formatDate(r.task.nextDueDate)} · ${coins}` : `Completed "${t.title}"${withParent} · ${coins}`;
    const toastId = toast(text, {
      action: { label: 'Undo', run: () => void undo(t, actions).then((ok) => ok && focusWhenPresent(rowControl(t.id, 'check'))) },
      returnFocus: (reason) => reason !== 'action' && neighbourFocus(t.id)(),
      onClose: (reason) => reason !== 'action' && leave(t, actions),
    });
    holdCompleted(t.id, toastId);
    // The last open step offers its parent (docs/tasks.md); the Undo toast of the step stays beside it.
    const parent = r.parent;
    if (parent && parent.allSubtasksDone && !parent.completed) toast(`All steps of "${parent.task.title}" are done.`, { action: { label: `Complete "${parent.task.title}"`, run: () => void complete(parent.task, actions) } });
    // The rest of the list is brought up to date at once (a sequential topic's next task is free now).
    void actions.changed();
    return true;
  } catch (err) {
    toastError(err);
    return false;
  }
}

/**
 * POST the completion. A task whose steps are still open is not completed by accident: the server
 * answers 409 SUBTASKS_OPEN, and the person is asked; on a yes the open steps are completed with it.
 * Null: they said no.
 */
async function completeAsking(t: Task): Promise<Sent<CompleteTaskReply> | null> {
  try {
    return await write(request('POST', '/api/tasks/:id/complete', { params: { id: t.id } }), { label: `Complete "${t.title}"` });
  } catch (err) {
    if (!(err instanceof ApiError) || err.code !== 'SUBTASKS_OPEN') throw err;
    const open = t.subtaskCount - t.subtasksDone;
    const yes = await ask({ title: `Complete "${t.title}"?`, body: `${open === 1 ? '1 of its steps is' : `${open} of its steps are`} still open. Completing it completes them too.`, confirm: 'Complete with its steps' });
    return yes ? write(request('POST', '/api/tasks/:id/complete', { params: { id: t.id }, body: { completeSubtasks: true } }), { label: `Complete "${t.title}" with its steps` }) : null;
  }
}

/**
 * The completed row's toast went: focus on the row moves to the next one, and the list reloads
 * (without it; a recurring task comes back with its next date, so focus leaves it too).
 */
function leave(t: Task, actions: TaskActions): void {
  if (document.querySelector(`[data-task-id="${t.id}"]`)?.contains(document.activeElement)) document.querySelector<HTMLElement>(neighbourOf(t.id).selector)?.focus();
  letGo(t.id);
  void Promise.resolve(actions.changed()).finally(() => forget(t.id));
}

async function undo(t: Task, actions: TaskActions): Promise<boolean> {
  // Undone from the row: its toast goes too (and does not take the row away).
  const held = justCompleted(t.id);
  if (held) closeToast(held.toastId, 'action');
  try {
    const sent = await write(request('DELETE', '/api/tasks/:id/complete', { params: { id: t.id } }), { label: `Reopen "${t.title}"` });
    forget(t.id);
    actions.changed();
    refreshGame();
    toast(sent.queued ? `Reopened "${t.title}" on this device · sent when you are online` : `Reopened "${t.title}" · −${sent.value.coinsRemoved} coins`);
    return true;
  } catch (err) {
    toastError(err);
    if (held) leave(t, actions); // still completed: the row goes as it would have
    return false;
  }
}

/** Snooze until a day, or wake it up (`until` null); the toast's Undo puts the snooze it had back. */
async function snooze(t: Task, until: string | null, actions: TaskActions) {
  const before = t.snoozedUntil;
  try {
    if (until) await write(request('POST', '/api/tasks/:id/snooze', { params: { id: t.id }, body: { snoozedUntil: until } }), { label: `Snooze "${t.title}"` });
    else await write(request('DELETE', '/api/tasks/:id/snooze', { params: { id: t.id } }), { label: `Wake up "${t.title}"` });
    actions.changed();
    toast(until ? `Snoozed until ${formatDate(until)}` : 'Woken up', {
      action: { label: 'Undo', run: () => void write(request('PATCH', '/api/tasks/:id', { params: { id: t.id }, body: { snoozedUntil: before } }), { label: `Undo snoozing "${t.title}"` }).then(actions.changed, toastError) },
    });
  } catch (err) {
    toastError(err);
  }
}

/** Pause (no quest, no reminders, out of Today until resumed) or resume, with Undo. */
async function setPaused(t: Task, paused: boolean, actions: TaskActions) {
  // Undoing a resume pauses it as it was (until its day, if it had one).
  const pause = () => write(request('POST', '/api/tasks/:id/pause', { params: { id: t.id }, body: paused || !t.pausedUntil ? {} : { until: t.pausedUntil } }), { label: `Pause "${t.title}"` });
  const resume = () => write(request('POST', '/api/tasks/:id/resume', { params: { id: t.id } }), { label: `Resume "${t.title}"` });
  try {
    await (paused ? pause() : resume());
    actions.changed();
    toast(paused ? `Paused "${t.title}": no quest, no reminders until you resume it` : `Resumed "${t.title}"`, {
      action: { label: 'Undo', run: () => void (paused ? resume() : pause()).then(actions.changed, toastError) },
    });
  } catch (err) {
    toastError(err);
  }
}

type QuickField = Pick<Task, 'dueDate' | 'priority' | 'topicId'>;

/** One field changed from the row's menu (two clicks), with an Undo that puts the old value back. */
async function quickChange(t: Task, change: Partial<QuickField>, message: string, actions: TaskActions) {
  const before = Object.fromEntries(Object.keys(change).map((k) => [k, t[k as keyof QuickField]]));
  try {
    // `base`: what the fields were, for the offline conflict rule (lib/outbox.ts)
    await write(request('PATCH', '/api/tasks/:id', { params: { id: t.id }, body: change }), { label: `Change "${t.title}"`, base: before });
    actions.changed();
    toast(message, { action: { label: 'Undo', run: () => void write(request('PATCH', '/api/tasks/:id', { params: { id: t.id }, body: before }), { label: `Undo change of "${t.title}"`, base: change }).then(actions.changed, toastError) } });
  } catch (err) {
    toastError(err);
  }
}

const PRIORITIES: [Task['priority'], string][] = [
  ['HIGH', 'High'],
  ['NORMAL', 'Normal'],
  ['SOMEDAY', 'Someday'],
];

/** Reschedule, priority and topic straight from the menu; only the choices that change something. */
function quickItems(t: Task, today: string, topics: Topic[], actions: TaskActions): MenuItem[] {
  if (t.completedAt) return [];
  const due: [string | null, string][] = [
    [today, 'Today'],
    [addDays(today, 1), 'Tomorrow'],
    [addDays(today, 7), 'Next week'],
    [null, 'No date'],
  ];
  return [
    // A recurring task's dates come from its schedule (edited in the panel).
    ...(t.type === 'RECURRING' ? [] : due.filter(([d]) => d !== t.dueDate).map(([d, label]) => ({ group: 'Due', label, run: () => void quickChange(t, { dueDate: d }, d ? `Due ${formatDate(d)}` : 'Date removed', actions) }))),
    ...PRIORITIES.filter(([p]) => p !== t.priority).map(([p, label]) => ({ group: 'Priority', label, run: () => void quickChange(t, { priority: p }, `Priority: ${label}`, actions) })),
    ...[...topics.filter((x) => !x.archived), null]
      .filter((x) => (x?.id ?? null) !== t.topicId && (x || t.topicId))
      .map((x) => ({ group: 'Topic', label: x ? x.title : 'No topic', run: () => void quickChange(t, { topicId: x?.id ?? null }, x ? `Moved to ${x.title}` : 'Topic removed', actions) })),
  ];
}

/**
 * Make a task with steps a topic of them (sequential: one step at a time), with an Undo that puts the
 * task back with its steps (docs/tasks.md, Promote to topic).
 */
async function promote(t: Task, sequential: boolean, actions: TaskActions) {
  const settle = () => Promise.all([actions.changed(), shared.refetchTopics()]);
  try {
    const r = await post('/api/tasks/:id/promote-to-topic', { params: { id: t.id }, body: { sequential } });
    void settle();
    toast(`"${r.topic.title}" is now a topic with ${r.tasks.length} task${r.tasks.length === 1 ? '' : 's'}`, {
      action: { label: 'Undo', run: () => void del('/api/tasks/:id/promote-to-topic', { params: { id: t.id } }).then(settle, toastError) },
    });
  } catch (err) {
    toastError(err);
  }
}

/** Which parents show their steps folded away (kept across list reloads). */
const [folded, setFolded] = createSignal<ReadonlySet<string>>(new Set());
const toggleFolded = (id: string) =>
  setFolded((s) => {
    const next = new Set(s);
    if (!next.delete(id)) next.add(id);
    return next;
  });
/** A task that was asked to take its first step: its step field opens (and takes the focus). */
const [addingStepTo, setAddingStepTo] = createSignal<string | null>(null);

function stepMenuItems(t: Task, actions: TaskActions): MenuItem[] {
  if (t.parentId || t.completedAt) return [];
  return [
    {
      label: 'Add a step',
      run: () => {
        setFolded((s) => new Set([...s].filter((x) => x !== t.id)));
        setAddingStepTo(t.id);
        focusWhenPresent(`[data-task-id="${t.id}"] .step-add input`);
      },
    },
    ...(t.subtaskCount > 0 && t.type !== 'RECURRING'
      ? [
          { label: 'Make it a topic', run: () => void promote(t, false, actions) },
          { label: 'Make it a topic, one step at a time', run: () => void promote(t, true, actions) },
        ]
      : []),
  ];
}

/** A task's steps under its row: indented, folded away on request, with a field to add one. */
function Steps(props: { parent: Task; steps: Task[]; today: string; topics: Topic[]; actions: TaskActions; select?: Selection | null | undefined }): JSX.Element {
  const p = () => props.parent;
  const open = () => !folded().has(p().id);
  const listId = () => `steps-${p().id}`;
  const [title, setTitle] = createSignal('');
  const [busy, setBusy] = createSignal(false);
  async function add(e: SubmitEvent) {
    e.preventDefault();
    const typed = title().trim();
    if (!typed || busy()) return;
    setBusy(true);
    setTitle('');
    try {
      await post('/api/tasks/:id/subtasks', { params: { id: p().id }, body: { title: typed } });
      await props.actions.changed();
    } catch (err) {
      if (!title()) setTitle(typed);
      toastError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <div class="steps">
      <Show when={p().subtaskCount > 0}>
        <button type="button" class="link small step-toggle" aria-expanded={open()} aria-controls={listId()} onClick={() => toggleFolded(p().id)}>
          {open() ? `Hide steps` : `Show ${p().subtaskCount} step${p().subtaskCount === 1 ? '' : 's'}`}
          <span class="sr-only"> of "{p().title}"</span>
        </button>
      </Show>
      <Show when={open() && (p().subtaskCount > 0 || addingStepTo() === p().id)}>
        <div id={listId()}>
          <Show when={props.steps.length > 0}>
            <ul class="list step-list" aria-label={`Steps of "${p().title}"`}>
              <For each={props.steps}>{(s) => <TaskRow task={s} today={props.today} topics={props.topics} actions={props.actions} hideTopic select={props.select} />}</For>
            </ul>
          </Show>
          <Show when={!p().completedAt && !props.select}>
            <form class="step-add" onSubmit={(e) => void add(e)}>
              <input type="text" aria-label={`Add a step to "${p().title}"`} placeholder="Add a step…" maxLength={255} value={title()} onInput={(e) => setTitle(e.currentTarget.value)} />
              <button type="submit" class="small" disabled={busy() || !title().trim()}>
                Add step
              </button>
            </form>
          </Show>
        </div>
      </Show>
    </div>
  );
}

function remove(t: Task, actions: TaskActions) {
  deleteWithUndo({ id: t.id, req: request('DELETE', '/api/tasks/:id', { params: { id: t.id } }), title: t.title, done: actions.changed, undone: () => focusWhenPresent(rowControl(t.id, 'menu')), returnFocus: neighbourFocus(t.id) });
}

/** Snooze choices in a row's menu: days from today, label. */
const SNOOZE: [number, string][] = [
  [1, 'tomorrow'],
  [3, '3 days'],
  [7, '1 week'],
];

/** "15 min", "1 h 30 min", "2 h". */
export function estimateLabel(minutes: number): string {
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  return [h ? `${h} h` : '', m ? `${m} min` : ''].filter(Boolean).join(' ');
}

export function TaskRow(props: { task: Task; today: string; topics: Topic[]; actions: TaskActions; hideTopic?: boolean; select?: Selection | null | undefined; /** the list can be put in order: a handle to drag, or to move with the arrow keys */ move?: ((id: string, by: number) => void) | undefined; steps?: Task[] }): JSX.Element {
  const t = () => props.task;
  // Completed a moment ago from this row: shown ticked, with Undo instead of the menu, until its toast goes.
  const held = () => justCompleted(t().id);
  const done = () => Boolean(t().completedAt) || held() !== undefined;
  const due = () => dueLabel(t().type === 'RECURRING' ? t().nextDueDate : t().dueDate, props.today);
  const snoozed = () => isSnoozed(t(), props.today);
  const paused = () => isPaused(t(), props.today);
  const topic = () => props.topics.find((x) => x.id === t().topicId);
  let box: HTMLInputElement | undefined;
  return (
    <li classList={{ done: done(), selected: props.select?.has(t().id) ?? false }} data-testid="task-row" data-task-id={t().id}>
      <Show when={props.move}>
        {(move) => (
          <button
            type="button"
            class="ghost icon-only small drag-handle"
            aria-label={`Move "${t().title}"`}
            aria-describedby="reorder-hint"
            onKeyDown={(e) => {
              const by = { ArrowUp: -1, ArrowDown: 1 }[e.key];
              if (!by) return;
              e.preventDefault();
              move()(t().id, by);
            }}
          >
            <Icon name="grip" />
          </button>
        )}
      </Show>
      {/* Selecting for a bulk action: the box selects, the row's own actions wait. */}
      <Show
        when={props.select}
        fallback={
          <input
            ref={box}
            class="task-check"
            type="checkbox"
            checked={done()}
            disabled={t().blocked && !done()}
            aria-label={done() ? `Reopen "${t().title}"` : `Complete "${t().title}"`}
            onChange={(e) => {
              const el = e.currentTarget;
              // The box shows the new state at once; a failed request puts it back.
              void (done() ? undo(t(), props.actions) : complete(t(), props.actions)).then((ok) => {
                if (!ok) el.checked = done();
              });
            }}
          />
        }
      >
        {(sel) => <input class="task-check select-check" type="checkbox" checked={sel().has(t().id)} aria-label={`Select "${t().title}"`} onChange={() => sel().toggle(t().id)} />}
      </Show>
      <div class="grow">
        <div class="title-line">
          <div class="title">{t().title}</div>
          {/* Right after the box in the focus order (one Tab away) and beside the title on screen. */}
          <Show when={!props.select && held()}>
            {(h) => (
              <button
                type="button"
                class="small"
                aria-label={`Undo completing "${t().title}"`}
                // While the focus is here the toast waits (nobody is rushed while reaching for Undo).
                onFocus={() => holdToast(h().toastId, 'focus', true)}
                onBlur={() => holdToast(h().toastId, 'focus', false)}
                onClick={() => void undo(t(), props.actions).then((ok) => ok && box?.focus())}
              >
                Undo
              </button>
            )}
          </Show>
        </div>
        <div class="meta">
          <Show when={t().subtaskCount > 0}>
            <span class="badge" data-testid="step-progress" title={`${t().subtasksDone} of ${t().subtaskCount} steps done`}>
              <span aria-hidden="true">{`${t().subtasksDone}/${t().subtaskCount}`}</span>
              <span class="sr-only">{`${t().subtasksDone} of ${t().subtaskCount} steps done`}</span>
            </span>
          </Show>
          <Show when={t().priority === 'HIGH'}>
            <span class="badge high">High</span>
          </Show>
          <Show when={t().priority === 'SOMEDAY'}>
            <span class="badge">Someday</span>
          </Show>
          {/* Snoozed or paused, it waits on purpose: that badge alone, not "overdue" beside it. */}
          <Show when={!done() && !snoozed() && !paused() && due()}>
            {(d) => <span class={`badge ${d().kind === 'later' ? '' : d().kind}`} data-testid="due-badge">{t().dueTime ? `${d().text} ${t().dueTime}` : d().text}</span>}
          </Show>
          <Show when={!done() && t().reminders.length > 0}>
            <span class="badge" title={`${t().reminders.length} reminder${t().reminders.length === 1 ? '' : 's'}`} data-testid="reminder-badge">
              {t().reminders.length === 1 ? 'reminder' : `${t().reminders.length} reminders`}
            </span>
          </Show>
          <Show when={t().type === 'RECURRING'}>
            <span class="badge" title="Recurring">
              <Icon name="repeat" size={14} /> recurring
            </span>
          </Show>
          <Show when={t().isDailyQuest}>
            <span class="badge ok">
              <Icon name="star" size={14} /> quest
            </span>
          </Show>
          <Show when={snoozed()}>
            <span class="badge">snoozed until {formatDate(t().snoozedUntil)}</span>
          </Show>
          <Show when={!done() && paused()}>
            <span class="badge" data-testid="paused-badge">
              <Icon name="pause" size={14} /> {t().pausedUntil ? `paused until ${formatDate(t().pausedUntil)}` : 'paused'}
            </span>
          </Show>
          <Show when={t().blocked}>
            <span class="badge" title="Sequential topic: an earlier task comes first">
              <Icon name="pause" size={14} /> waiting
            </span>
          </Show>
          <Show when={t().estimatedMinutes}>
            {(m) => (
              <span class="indicator" data-testid="estimate" title="Estimate">
                <Icon name="clock" size={14} />
                <span class="sr-only">Estimate:</span> {estimateLabel(m())}
              </span>
            )}
          </Show>
          <Show when={t().notes?.trim()}>
            {(n) => (
              <span class="indicator" data-testid="has-notes" title={n().length > 120 ? `${n().slice(0, 120)}…` : n()}>
                <Icon name="notes" size={14} />
                <span class="sr-only">Has notes</span>
              </span>
            )}
          </Show>
          <Show when={!props.hideTopic && topic()}>
            {(x) => (
              <a class="topic-tag" href={`/topics/${x().id}`} data-testid="topic-tag">
                <span class="topic-dot" style={{ background: x().color ?? 'var(--accent)' }} aria-hidden="true" />
                {x().title}
              </a>
            )}
          </Show>
        </div>
      </div>
      <Show when={!held() && !props.select}>
        <div class="actions">
          <ActionsMenu
            label={`Actions for "${t().title}"`}
            items={[
              ...(done() ? [] : snoozed() ? [{ label: 'Wake up', run: () => void snooze(t(), null, props.actions) }] : SNOOZE.map(([days, label]) => ({ label: `Snooze: ${label}`, run: () => void snooze(t(), addDays(props.today, days), props.actions) }))),
              ...(done() ? [] : [paused() ? { label: 'Resume', run: () => void setPaused(t(), false, props.actions) } : { label: 'Pause', run: () => void setPaused(t(), true, props.actions) }]),
              ...quickItems(t(), props.today, props.topics, props.actions),
              ...stepMenuItems(t(), props.actions),
              ...(props.actions.edit ? [{ label: 'Edit', run: () => props.actions.edit!(t()) }] : []),
              { label: 'Delete', danger: true, run: () => remove(t(), props.actions) },
            ]}
          />
        </div>
      </Show>
      <Show when={!t().parentId}>
        <Steps parent={t()} steps={props.steps ?? []} today={props.today} topics={props.topics} actions={props.actions} select={props.select} />
      </Show>
    </li>
  );
}

export function TaskList(props: {
  tasks: Task[];
  today: string;
  topics: Topic[];
  actions: TaskActions;
  empty?: JSX.Element;
  hideTopic?: boolean;
  label: string;
  select?: Selection | null | undefined;
  /** the rows can be put in order (a topic's list): the task goes to this index of `tasks` */
  reorder?: (id: string, to: number) => void;
}): JSX.Element {
  // A deleted task leaves at once; its DELETE waits for the Undo toast (lib/undoable-delete.ts).
  const shown = createMemo(() => props.tasks.filter((t) => !isDeleted(t.id)));
  // Steps go under their parent when it is in this list too; else they stand on their own here.
  const tree = createMemo(() => {
    const ids = new Set(shown().map((t) => t.id));
    const steps = new Map<string, Task[]>();
    for (const t of shown()) if (t.parentId && ids.has(t.parentId)) steps.set(t.parentId, [...(steps.get(t.parentId) ?? []), t]);
    for (const list of steps.values()) list.sort((a, b) => a.sortOrder - b.sortOrder || a.createdAt.localeCompare(b.createdAt));
    return { top: shown().filter((t) => !t.parentId || !ids.has(t.parentId)), steps };
  });
  // the list's own rows (a task's steps move with it)
  const move = (id: string, by: number) => {
    const top = tree().top;
    const at = top.findIndex((t) => t.id === id);
    const to = at + by;
    if (at < 0 || to < 0 || to >= top.length) return;
    props.reorder!(id, props.tasks.indexOf(top[to]!));
  };
  let list: HTMLUListElement | undefined;
  /**
   * Drag by the handle (mouse, pen or finger): the row follows the pointer, a line shows where it
   * would land, and letting go moves it there. Pointer events, so it works on a touch screen too.
   */
  const drag = (e: PointerEvent) => {
    const handle = (e.target as HTMLElement).closest('.drag-handle');
    const row = handle?.closest<HTMLElement>('[data-task-id]');
    if (!handle || !row || !list || e.button !== 0) return;
    e.preventDefault();
    const id = row.dataset.taskId!;
    const rows = [...list.querySelectorAll<HTMLElement>(':scope > [data-task-id]')];
    const from = rows.indexOf(row);
    const startY = e.clientY;
    let to = from;
    row.classList.add('dragging');
    const onMove = (ev: PointerEvent) => {
      row.style.transform = `translateY(${ev.clientY - startY}px)`;
      // the index among the other rows whose middle is above the pointer
      to = rows.filter((r) => r !== row && r.getBoundingClientRect().top + r.offsetHeight / 2 < ev.clientY).length;
      rows.forEach((r) => r.classList.remove('drop-before', 'drop-after'));
      const others = rows.filter((r) => r !== row);
      if (to !== from) {
        if (to < others.length) others[to]!.classList.add('drop-before');
        else others.at(-1)!.classList.add('drop-after');
      }
    };
    const onUp = () => {
      removeEventListener('pointermove', onMove);
      removeEventListener('pointerup', onUp);
      removeEventListener('pointercancel', onUp);
      row.classList.remove('dragging');
      row.style.transform = '';
      rows.forEach((r) => r.classList.remove('drop-before', 'drop-after'));
      if (to !== from) move(id, to - from);
    };
    addEventListener('pointermove', onMove);
    addEventListener('pointerup', onUp);
    addEventListener('pointercancel', onUp);
  };
  return (
    <Show when={shown().length > 0} fallback={<Empty>{props.empty ?? 'Nothing here.'}</Empty>}>
      <Show when={props.reorder}>
        <p id="reorder-hint" class="sr-only">
          Drag the handle, or press the up and down arrow keys on it, to put this task earlier or later.
        </p>
      </Show>
      <ul class="list" aria-label={props.label} ref={list} onPointerDown={(e) => props.reorder && drag(e)}>
        <For each={tree().top}>{(t) => <TaskRow task={t} today={props.today} topics={props.topics} actions={props.actions} hideTopic={props.hideTopic} select={props.select} move={props.reorder && !props.select ? move : undefined} steps={tree().steps.get(t.id)} />}</For>
      </ul>
    </Show>
  );
}

/**
 * One-line task entry. `n` anywhere (outside a text field) focuses it; Enter creates and the field
 * keeps focus for the next task. What the parser recognises (dates, priority, topic, recurrence) is
 * shown as the person types.
 */
export function QuickAdd(props: { topics: Topic[]; today: string; topicId?: string | null; onCreated: () => void }): JSX.Element {
  const [text, setText] = createSignal('');
  const [busy, setBusy] = createSignal(false);
  const parsed = createMemo(() => parseLine(text(), props.today, props.topics));
  let input!: HTMLInputElement;
  const onKey = (e: KeyboardEvent) => {
    const target = e.target as HTMLElement;
    if (e.key === 'n' && !e.ctrlKey && !e.metaKey && !e.altKey && !/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) && !target.isContentEditable) {
      e.preventDefault();
      input.focus();
    }
  };
  document.addEventListener('keydown', onKey);
  onCleanup(() => document.removeEventListener('keydown', onKey));
  // Typing that began on the page being left goes on here (bug 8).
  handOverDraft(() => input, text, setText);

  async function submit(e: SubmitEvent) {
    e.preventDefault();
    const typed = text();
    const task = createBody(parseLine(typed, props.today, props.topics), props.topicId);
    if (!task.title || busy()) return;
    setBusy(true);
    // Cleared at once, so the next task can be typed while this one saves; put back if saving fails.
    setText('');
    try {
      const sent = await write(request('POST', '/api/tasks', { body: task }), { label: `Add "${task.title}"` });
      props.onCreated();
      // the first task ends Today's "New here?" banner (the profile counts tasks created)
      if (shared.profile()?.totalTasksCreated === 0) void shared.refetchProfile();
      toast(sent.queued ? `Added "${task.title}" on this device · sent when you are online` : `Added "${task.title}"`);
    } catch (err) {
      if (!text()) setText(typed);
      toastError(err);
    } finally {
      setBusy(false);
      input.focus();
    }
  }
  return (
    <form class="stack quick-add-form" style={{ gap: '0.3rem' }} onSubmit={(e) => void submit(e)} aria-label="Quick add">
      <div class="quick-add">
        <label class="sr-only" for="quick-add">
          Quick add a task
        </label>
        <PhraseField id="quick-add" ref={(el) => (input = el)} value={text()} onInput={setText} parsed={parsed()} describedBy="quick-add-hint" placeholder="Add a task…  (press n)" testId="quick-add" />
        <button class="primary" type="submit" disabled={busy() || !parsed().title}>
          Add
        </button>
      </div>
      {/* Phones: a floating button that brings quick add back from anywhere down the page. */}
      <button
        class="fab primary"
        type="button"
        aria-label="Add a task"
        onClick={() => {
          input.scrollIntoView({ block: 'center' });
          input.focus();
        }}
      >
        <Icon name="plus" size={28} />
      </button>
      <PhraseChips id="quick-add-hint" parsed={parsed()} testId="quick-add" />
    </form>
  );
}
