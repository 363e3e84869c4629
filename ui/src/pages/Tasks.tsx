import { useSearchParams } from '@solidjs/router';
import { createMemo, createResource, createSignal, For, Index, onMount, Show, type JSX, type ResourceFetcherInfo } from 'solid-js';
import { read } from '../lib/cache.ts';
import { refetchOnReconnect } from '../lib/connection.ts';
import { shared } from '../lib/data.ts';
import { groupTasks, sortTasks, TASK_SORTS, type TaskSort } from '../lib/task-groups.ts';
import { BulkBar, createSelection } from '../components/BulkBar.tsx';
import { isDeleted } from '../lib/undoable-delete.ts';
import { keepJustCompleted } from '../lib/just-completed.ts';
import { reconciled } from '../lib/reconciled.ts';
import type { Priority, Task, TaskType } from '../lib/types.ts';
import { QuickAdd, TaskList } from '../components/TaskList.tsx';
import { TaskPanel } from '../components/TaskPanel.tsx';
import { Empty, ErrorBanner, Field, Spinner } from '../components/ui.tsx';

type Status = 'open' | 'completed' | 'all';

export default function Tasks(): JSX.Element {
  // Filters live in the URL so a filtered view can be bookmarked and the back button works.
  const [params, setParams] = useSearchParams<{ status?: Status; topic?: string; priority?: Priority; type?: TaskType; q?: string; sort?: TaskSort }>();
  const status = () => params.status ?? 'open';
  const sort = (): TaskSort => (TASK_SORTS.some(([s]) => s === params.sort) ? params.sort! : 'grouped');
  const [tasks, { refetch }] = createResource(
    () => ({ status: status(), topic: params.topic, priority: params.priority, type: params.type }),
    async (f, { value, refetching }: ResourceFetcherInfo<Task[]>) =>
      keepJustCompleted(
        refetching ? value : undefined,
        (await read('/api/tasks', { query: { completed: f.status === 'all' ? undefined : f.status === 'completed', topicId: f.topic, priority: f.priority, type: f.type, limit: 500 } })).tasks,
      ),
    { storage: reconciled },
  );
  const visible = createMemo(() => {
    const q = (params.q ?? '').trim().toLowerCase();
    const list = (tasks.latest ?? []).filter((t) => !isDeleted(t.id));
    return q ? list.filter((t) => t.title.toLowerCase().includes(q) || (t.notes ?? '').toLowerCase().includes(q)) : list;
  });
  // Back online (and once queued changes are sent): the list as the server has it.
  refetchOnReconnect(refetch);
  // Grouped by when (the default), or one flat list in the order chosen.
  const groups = createMemo(() => {
    const s = sort();
    return s === 'grouped' ? groupTasks(visible(), shared.today()) : visible().length ? [{ name: TASK_SORTS.find(([k]) => k === s)![1], tasks: sortTasks(visible(), s), flat: true }] : [];
  });
  const selection = createSelection();
  const filtered = () => Boolean(params.topic || params.priority || params.type);
  /** An empty list says why and offers the way out: clear the search or the filters. */
  const emptyState = (): JSX.Element => {
    const q = (params.q ?? '').trim();
    if (q)
      return (
        <>
          No tasks match "{q}"{filtered() ? ' with these filters' : ''}. Try another word or{' '}
          <button type="button" class="link" onClick={() => setParams({ q: undefined })}>
            clear the search
          </button>
          .
        </>
      );
    if (filtered())
      return (
        <>
          No {status() === 'all' ? '' : status()} tasks match these filters.{' '}
          <button type="button" class="link" onClick={() => setParams({ topic: undefined, priority: undefined, type: undefined })}>
            Clear the filters
          </button>
        </>
      );
    if (status() === 'completed') return 'Nothing completed yet. Tick a task when it is done and it shows up here.';
    return 'No open tasks. Type one into quick add above (press n), e.g. "Call the bank tomorrow".';
  };
  const [editing, setEditing] = createSignal<Task | 'new' | null>(null);
  const topics = () => shared.topics() ?? [];
  // Topics made elsewhere (another device, the API) name their tasks here without a reload.
  onMount(() => void shared.refetchTopics());
  const changed = () => {
    void shared.refetchTopics();
    return refetch();
  };

  return (
    <>
      <div class="page-head">
        <h1>Tasks</h1>
        <button class="primary" type="button" onClick={() => setEditing('new')}>
          New task
        </button>
      </div>
      <div class="stack">
        <section class="card">
          <QuickAdd topics={topics()} today={shared.today()} topicId={params.topic && params.topic !== 'none' ? params.topic : null} onCreated={changed} />
        </section>
        <section class="card" aria-labelledby="filters-h">
          <h2 id="filters-h" class="sr-only">
            Filters
          </h2>
          <div class="form-grid filters">
            <Field label="Show">
              {(id) => (
                <select id={id} value={status()} onChange={(e) => setParams({ status: e.currentTarget.value === 'open' ? undefined : e.currentTarget.value })}>
                  <option value="open">Open</option>
                  <option value="completed">Completed</option>
                  <option value="all">All</option>
                </select>
              )}
            </Field>
            <Field label="Topic">
              {(id) => (
                <select id={id} value={params.topic ?? ''} onChange={(e) => setParams({ topic: e.currentTarget.value || undefined })}>
                  <option value="">All topics</option>
                  <option value="none">No topic</option>
                  <For each={topics()}>{(t) => <option value={t.id}>{t.title}</option>}</For>
                </select>
              )}
            </Field>
            <Field label="Priority">
              {(id) => (
                <select id={id} value={params.priority ?? ''} onChange={(e) => setParams({ priority: e.currentTarget.value || undefined })}>
                  <option value="">Any</option>
                  <option value="HIGH">High</option>
                  <option value="NORMAL">Normal</option>
                  <option value="SOMEDAY">Someday</option>
                </select>
              )}
            </Field>
            <Field label="Type">
              {(id) => (
                <select id={id} value={params.type ?? ''} onChange={(e) => setParams({ type: e.currentTarget.value || undefined })}>
                  <option value="">Any</option>
                  <option value="ONE_TIME">One-time</option>
                  <option value="RECURRING">Recurring</option>
                  <option value="DAILY_ELIGIBLE">Quest candidate</option>
                </select>
              )}
            </Field>
            <Field label="Sort">
              {(id) => (
                <select id={id} value={sort()} onChange={(e) => setParams({ sort: e.currentTarget.value === 'grouped' ? undefined : e.currentTarget.value })}>
                  <For each={TASK_SORTS}>{([value, label]) => <option value={value}>{label}</option>}</For>
                </select>
              )}
            </Field>
            <Field label="Search">
              {(id) => <input id={id} type="search" value={params.q ?? ''} onInput={(e) => setParams({ q: e.currentTarget.value || undefined }, { replace: true })} />}
            </Field>
          </div>
        </section>
        <section class="card" aria-labelledby="list-h">
          <div class="row between">
            <h2 id="list-h">{status() === 'completed' ? 'Completed' : status() === 'all' ? 'All tasks' : 'Open tasks'}</h2>
            <div class="row">
              <span class="muted small">{visible().length} shown</span>
              <Show when={!selection.on() && visible().length > 0}>
                <button type="button" class="small" data-testid="select-tasks" onClick={() => selection.start()}>
                  Select
                </button>
              </Show>
            </div>
          </div>
          <Show when={selection.on()}>
            <BulkBar selection={selection} tasks={visible().filter((t) => !t.completedAt)} topics={topics()} today={shared.today()} changed={changed} />
          </Show>
          <Show when={!tasks.error} fallback={<ErrorBanner error={tasks.error} />}>
            <Show when={tasks.latest !== undefined} fallback={<Spinner />}>
              <Show when={groups().length > 0} fallback={<Empty>{emptyState()}</Empty>}>
                {/* by position, not by object: the groups are rebuilt on every change, their rows are kept */}
                <Index each={groups()}>
                  {(group) => (
                    <section class="task-group" data-group={group().name} aria-labelledby={`group-${group().name}`}>
                      <h3 id={`group-${group().name}`} classList={{ overdue: group().name === 'Overdue', 'sr-only': 'flat' in group() }}>
                        {'flat' in group() ? `Sorted by ${group().name.toLowerCase()}` : group().name} <span class="muted small">{group().tasks.length}</span>
                      </h3>
                      <TaskList label={'flat' in group() ? 'Tasks' : `${group().name} tasks`} tasks={group().tasks} today={shared.today()} topics={topics()} actions={{ changed, edit: (t) => setEditing(t) }} select={selection.rows()} />
                    </section>
                  )}
                </Index>
              </Show>
            </Show>
          </Show>
        </section>
      </div>
      <Show when={editing()} keyed>
        {(e) => (
          <TaskPanel
            editing={e}
            topics={topics()}
            today={shared.today()}
            defaultTopicId={params.topic && params.topic !== 'none' ? params.topic : null}
            onSaved={() => {
              setEditing(null);
              void changed();
            }}
            onClose={() => setEditing(null)}
          />
        )}
      </Show>
    </>
  );
}
