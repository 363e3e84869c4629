import { createMemo, createSignal, Show, type JSX } from 'solid-js';
import { patch, request, type BodyOf } from '../lib/api.ts';
import { addDays, formatDate } from '../lib/dates.ts';
import { toast, toastError } from '../lib/toast.ts';
import type { Task, Topic } from '../lib/types.ts';
import { deleteWithUndo } from '../lib/undoable-delete.ts';
import { refreshGame } from '../lib/game.ts';
import { focusWhenPresent } from '../lib/focus.ts';
import { ActionsMenu, type MenuItem } from './Menu.tsx';

/** Which rows are selected for a bulk action; `null` while the list is not in selection mode. */
export interface Selection {
  has: (id: string) => boolean;
  toggle: (id: string) => void;
}

export function createSelection() {
  const [on, setOn] = createSignal(false);
  const [ids, setIds] = createSignal<ReadonlySet<string>>(new Set());
  const selection: Selection = {
    has: (id) => ids().has(id),
    toggle: (id) =>
      setIds((s) => {
        const next = new Set(s);
        if (next.has(id)) next.delete(id);
        else next.add(id);
        return next;
      }),
  };
  return {
    on,
    ids,
    /** for the rows: null unless selecting */
    rows: () => (on() ? selection : null),
    set: (list: string[]) => setIds(new Set(list)),
    start: () => setOn(true),
    stop: () => (setOn(false), setIds(new Set<string>())),
  };
}
export type SelectionState = ReturnType<typeof createSelection>;

const plural = (n: number) => `${n} task${n === 1 ? '' : 's'}`;

/**
 * The actions for the selected tasks, through `PATCH /api/tasks/bulk` (one request, which the gateway
 * counts task by task against the rate limits): complete, delete (with Undo: the request waits for the
 * toast), and from its menu move to a topic, priority, snooze. Moves and priority changes have Undo,
 * which puts each task's own previous value back.
 */
export function BulkBar(props: { selection: SelectionState; tasks: Task[]; topics: Topic[]; today: string; changed: () => unknown }): JSX.Element {
  const sel = props.selection;
  const chosen = createMemo(() => props.tasks.filter((t) => sel.ids().has(t.id)));
  const count = () => chosen().length;
  const allChosen = () => props.tasks.length > 0 && count() === props.tasks.length;
  const finish = () => {
    sel.stop();
    void props.changed();
    focusWhenPresent('[data-testid="select-tasks"]');
  };

  async function run(body: BodyOf<'PATCH', '/api/tasks/bulk'>, message: string, undo?: () => Promise<unknown>) {
    try {
      const r = await patch('/api/tasks/bulk', { body });
      finish();
      toast(message.replace('{n}', plural(r.affected)), undo ? { action: { label: 'Undo', run: () => void undo().then(props.changed, toastError) } } : {});
    } catch (err) {
      toastError(err);
    }
  }

  /** One field for every chosen task, with an Undo that restores each task's own value (grouped by it). */
  function setField(field: 'topicId' | 'priority', value: string | null, message: string) {
    const before = new Map<string | null, string[]>();
    for (const t of chosen()) before.set(t[field], [...(before.get(t[field]) ?? []), t.id]);
    const body = (v: string | null, taskIds: string[]): BodyOf<'PATCH', '/api/tasks/bulk'> => (field === 'topicId' ? { action: 'changeTopic', taskIds, topicId: v } : { action: 'setPriority', taskIds, priority: v as Task['priority'] });
    void run(body(value, chosen().map((t) => t.id)), message, () => Promise.all([...before].map(([v, taskIds]) => patch('/api/tasks/bulk', { body: body(v, taskIds) }))));
  }

  function complete() {
    const recurring = chosen().filter((t) => t.type === 'RECURRING').length;
    // The bulk route skips recurring tasks and pays no coins (the reference's rule): said, not hidden.
    void run({ action: 'complete', taskIds: chosen().map((t) => t.id) }, `Completed {n} (a bulk completion earns no coins${recurring ? `; ${plural(recurring)} recurring left as they are` : ''})`).then(refreshGame);
  }

  function remove() {
    const taskIds = chosen().map((t) => t.id);
    const n = taskIds.length;
    sel.stop();
    deleteWithUndo({ id: `bulk:${taskIds.join(',')}`, req: request('PATCH', '/api/tasks/bulk', { body: { action: 'delete', taskIds } }), title: plural(n), message: `Deleted ${plural(n)}`, bulk: { ids: taskIds }, done: props.changed, returnFocus: () => focusWhenPresent('[data-testid="select-tasks"]') });
  }

  const more = (): MenuItem[] => [
    ...[...props.topics.filter((x) => !x.archived), null].map((x) => ({ group: 'Move to', label: x ? x.title : 'No topic', run: () => setField('topicId', x?.id ?? null, x ? `Moved {n} to ${x.title}` : 'Topic removed from {n}') })),
    ...(
      [
        ['HIGH', 'High'],
        ['NORMAL', 'Normal'],
        ['SOMEDAY', 'Someday'],
      ] as const
    ).map(([p, label]) => ({ group: 'Priority', label, run: () => setField('priority', p, `Priority ${label} for {n}`) })),
    ...(
      [
        [1, 'Tomorrow'],
        [7, 'Next week'],
      ] as const
    ).map(([days, label]) => ({ group: 'Snooze until', label, run: () => void run({ action: 'snooze', taskIds: chosen().map((t) => t.id), snoozedUntil: addDays(props.today, days) }, `Snoozed {n} until ${formatDate(addDays(props.today, days))}`) })),
  ];

  return (
    <div class="bulk-bar" role="region" aria-label="Selected tasks" data-testid="bulk-bar" onKeyDown={(e) => e.key === 'Escape' && !e.defaultPrevented && finish()}>
      <span class="bulk-count" role="status">
        {count()} selected
      </span>
      <button type="button" class="small" onClick={() => sel.set(allChosen() ? [] : props.tasks.map((t) => t.id))}>
        {allChosen() ? 'Select none' : 'Select all'}
      </button>
      <Show when={count() > 0}>
        <button type="button" class="small primary" onClick={complete}>
          Complete
        </button>
        <ActionsMenu label={`Move, priority or snooze ${plural(count())}`} text="Move…" items={more()} />
        <button type="button" class="small danger" onClick={remove}>
          Delete
        </button>
      </Show>
      <button type="button" class="small ghost" onClick={finish}>
        Cancel
      </button>
    </div>
  );
}
