import { A, useNavigate, useParams } from '@solidjs/router';
import { createResource, createSignal, For, onMount, Show, type JSX, type ResourceFetcherInfo } from 'solid-js';
import { ApiError, patch, post, put, request, type BodyOf } from '../lib/api.ts';
import { read } from '../lib/cache.ts';
import { refetchOnReconnect } from '../lib/connection.ts';
import { shared } from '../lib/data.ts';
import { reconciled } from '../lib/reconciled.ts';
import { toast, toastError } from '../lib/toast.ts';
import type { Priority, Task, Topic } from '../lib/types.ts';
import { QuickAdd, TaskList } from '../components/TaskList.tsx';
import { TaskPanel } from '../components/TaskPanel.tsx';
import { deleteWithUndo } from '../lib/undoable-delete.ts';
import { keepJustCompleted } from '../lib/just-completed.ts';
import { dismissable, Empty, ErrorBanner, Field, FormActions, PrioritySelect, Spinner } from '../components/ui.tsx';

function TopicForm(props: { topic?: Topic; onSaved: (t: Topic) => void; onCancel?: () => void }): JSX.Element {
  const [title, setTitle] = createSignal(props.topic?.title ?? '');
  const [description, setDescription] = createSignal(props.topic?.description ?? '');
  const [priority, setPriority] = createSignal<Priority>((props.topic?.priority as Priority) ?? 'NORMAL');
  const [sequential, setSequential] = createSignal(props.topic?.sequential ?? false);
  const [color, setColor] = createSignal(props.topic?.color ?? '#4338ca');
  const [error, setError] = createSignal<ApiError | null>(null);
  async function save(e: SubmitEvent) {
    e.preventDefault();
    setError(null);
    const body: BodyOf<'POST', '/api/topics'> = { title: title().trim(), description: description().trim() || null, priority: priority(), sequential: sequential(), color: color() };
    try {
      const r = props.topic ? await patch('/api/topics/:id', { params: { id: props.topic.id }, body }) : await post('/api/topics', { body });
      props.onSaved(r.topic);
      if (!props.topic) setTitle('');
    } catch (err) {
      if (err instanceof ApiError) setError(err);
      else toastError(err);
    }
  }
  return (
    <form class="stack" ref={(el) => props.onCancel && dismissable(el, props.onCancel)} onSubmit={(e) => void save(e)} aria-label={props.topic ? 'Edit topic' : 'New topic'}>
      <div class="form-grid">
        <Field label="Topic name" error={error()?.fieldError('title')}>
          {(id, d) => <input id={id} aria-describedby={d} value={title()} onInput={(e) => setTitle(e.currentTarget.value)} maxlength="100" required />}
        </Field>
        <Field label="Priority">
          {(id) => (
            <PrioritySelect id={id} value={priority()} onChange={setPriority} />
          )}
        </Field>
        <Field label="Colour">
          {(id) => <input id={id} type="color" value={color()} onInput={(e) => setColor(e.currentTarget.value)} />}
        </Field>
      </div>
      <Field label="Description">
        {(id) => <textarea id={id} maxlength="5000" value={description()} onInput={(e) => setDescription(e.currentTarget.value)} />}
      </Field>
      <label class="check">
        <input type="checkbox" checked={sequential()} onChange={(e) => setSequential(e.currentTarget.checked)} />
        Sequential: only the first open task is actionable (the rest wait their turn)
      </label>
      <Show when={error() && error()!.issues.length === 0}>
        <ErrorBanner error={error()} />
      </Show>
      <FormActions submitLabel={props.topic ? 'Save topic' : 'Create topic'} onCancel={props.onCancel} />
    </form>
  );
}

function TopicIndex(): JSX.Element {
  // The list as it is now: a topic made elsewhere (another device, the API) shows without a reload.
  onMount(() => void shared.refetchTopics());
  const [creating, setCreating] = createSignal(false);
  const [showArchived, setShowArchived] = createSignal(false);
  const list = () => (shared.topics() ?? []).filter((t) => showArchived() || !t.archived);
  return (
    <>
      <div class="page-head">
        <h1>Topics</h1>
        <button class="primary" type="button" onClick={() => setCreating(true)}>
          New topic
        </button>
      </div>
      <div class="stack">
        <Show when={creating()}>
          <section class="card">
            <h2>New topic</h2>
            <TopicForm
              onSaved={(t) => {
                setCreating(false);
                void shared.refetchTopics();
                toast(`Created topic "${t.title}"`);
              }}
              onCancel={() => setCreating(false)}
            />
          </section>
        </Show>
        <label class="check">
          <input type="checkbox" checked={showArchived()} onChange={(e) => setShowArchived(e.currentTarget.checked)} /> Show archived topics
        </label>
        <Show when={shared.topics() !== undefined} fallback={<Spinner />}>
          <Show when={list().length > 0} fallback={<Empty>{(shared.topics() ?? []).length > 0 ? 'Every topic is archived. Tick "Show archived topics" to see them.' : 'No topics yet. Create one with New topic: topics group tasks, and a sequential topic is a checklist done in order.'}</Empty>}>
            <div class="grid">
              <For each={list()}>
                {(t) => (
                  <A href={`/topics/${t.id}`} class="card" style={{ 'text-decoration': 'none', color: 'inherit', 'border-left': `6px solid ${t.color ?? 'var(--accent)'}` }}>
                    <h2>{t.title}</h2>
                    <div class="row small muted">
                      <span>
                        {t.openTaskCount} open / {t.taskCount} tasks
                      </span>
                      <Show when={t.sequential}>
                        <span class="badge">sequential</span>
                      </Show>
                      <Show when={t.priority === 'HIGH'}>
                        <span class="badge high">High</span>
                      </Show>
                      <Show when={t.archived}>
                        <span class="badge">archived</span>
                      </Show>
                    </div>
                    <Show when={t.taskCount > 0}>
                      <div class="progress" style={{ 'margin-top': '0.6rem' }} role="progressbar" aria-valuemin="0" aria-valuemax={t.taskCount} aria-valuenow={t.taskCount - t.openTaskCount} aria-label="Done">
                        <span style={{ width: `${((t.taskCount - t.openTaskCount) / t.taskCount) * 100}%` }} />
                      </div>
                    </Show>
                  </A>
                )}
              </For>
            </div>
          </Show>
        </Show>
      </div>
    </>
  );
}

function TopicDetail(props: { id: string }): JSX.Element {
  const navigate = useNavigate();
  const [data, { refetch, mutate }] = createResource(
    () => props.id,
    async (id, { value, refetching }: ResourceFetcherInfo<{ topic: Topic; tasks: Task[] }>) => {
      const d = await read('/api/topics/:id', { params: { id } });
      return { ...d, tasks: keepJustCompleted(refetching ? value?.tasks : undefined, d.tasks) };
    },
    { storage: reconciled },
  );
  refetchOnReconnect(refetch);
  const [editingTopic, setEditingTopic] = createSignal(false);
  const [editingTask, setEditingTask] = createSignal<Task | null>(null);
  const changed = () => {
    void shared.refetchTopics();
    return refetch();
  };
  const [movedText, setMoved] = createSignal('');
  /**
   * Put a task elsewhere in the topic's order (what "first open task" of a sequential topic means):
   * shown at once, saved as the whole order (`PUT /api/topics/:id/reorder`), then reloaded for the
   * tasks now waiting or free. The handle keeps the focus, so the arrow keys can go on moving it.
   */
  // Moves in quick succession (the arrow key pressed twice) are saved one after another, in order,
  // and the topic is reloaded once the last is saved: a reload between two saves would bring back
  // the order of the first and undo the second on screen.
  let saving: Promise<void> = Promise.resolve();
  let unsaved = 0;
  async function reorder(id: string, to: number) {
    const d = data.latest;
    if (!d) return;
    const tasks = [...d.tasks];
    const from = tasks.findIndex((t) => t.id === id);
    const [moved] = tasks.splice(from, 1);
    tasks.splice(to, 0, moved!);
    mutate({ ...d, tasks });
    document.querySelector<HTMLElement>(`[data-task-id="${id}"] .drag-handle`)?.focus();
    setMoved(`"${moved!.title}" moved to place ${to + 1} of ${tasks.length}.`);
    const taskIds = tasks.map((t) => t.id);
    unsaved++;
    saving = saving.then(() => put('/api/topics/:id/reorder', { params: { id: d.topic.id }, body: { taskIds } }).then(() => undefined, toastError));
    await saving;
    if (--unsaved > 0) return;
    // The reload renders new rows, so the handle that had the focus is gone: give it to the same task's handle.
    const focused = document.activeElement?.closest<HTMLElement>('[data-task-id]')?.dataset.taskId;
    await refetch();
    if (focused && (!document.activeElement || document.activeElement === document.body)) document.querySelector<HTMLElement>(`[data-task-id="${focused}"] .drag-handle`)?.focus();
  }
  function remove(t: Topic) {
    // Undoable: the topic leaves the lists at once, its DELETE waits for the toast to go.
    deleteWithUndo({ id: t.id, req: request('DELETE', '/api/topics/:id', { params: { id: t.id } }), title: t.title, message: `Deleted the topic "${t.title}"; its tasks are kept without a topic`, done: () => void shared.refetchTopics() });
    navigate('/topics');
  }
  async function archive(t: Topic) {
    try {
      await patch('/api/topics/:id', { params: { id: t.id }, body: { archived: !t.archived } });
      void changed();
    } catch (err) {
      toastError(err);
    }
  }
  return (
    <Show when={!data.error} fallback={<ErrorBanner error={data.error} />}>
      <Show when={data.latest} fallback={<Spinner />}>
        {(d) => (
          <>
            <div class="page-head">
              <div>
                <A href="/topics" class="small">
                  ← Topics
                </A>
                <h1>{d().topic.title}</h1>
              </div>
              <div class="row">
                <button type="button" onClick={() => setEditingTopic(!editingTopic())}>
                  Edit topic
                </button>
                <button type="button" onClick={() => void archive(d().topic)}>
                  {d().topic.archived ? 'Unarchive' : 'Archive'}
                </button>
                <button type="button" class="danger" onClick={() => remove(d().topic)}>
                  Delete
                </button>
              </div>
            </div>
            <div class="stack">
              <Show when={d().topic.description}>
                <p class="muted">{d().topic.description}</p>
              </Show>
              <Show when={d().topic.sequential}>
                <div class="banner info">Sequential topic: tasks are done in order; later ones wait until the earlier ones are complete.</div>
              </Show>
              <Show when={editingTopic()}>
                <section class="card">
                  <TopicForm
                    topic={d().topic}
                    onSaved={() => {
                      setEditingTopic(false);
                      void changed();
                    }}
                    onCancel={() => setEditingTopic(false)}
                  />
                </section>
              </Show>
              <Show when={editingTask()} keyed>
                {(t) => <TaskPanel editing={t} topics={shared.topics() ?? []} today={shared.today()} onSaved={() => (setEditingTask(null), changed())} onClose={() => setEditingTask(null)} />}
              </Show>
              <section class="card">
                <QuickAdd topics={shared.topics() ?? []} today={shared.today()} topicId={d().topic.id} onCreated={changed} />
              </section>
              <section class="card">
                <h2>Tasks</h2>
                <p class="sr-only" role="status">
                  {movedText()}
                </p>
                <TaskList hideTopic reorder={(id, to) => void reorder(id, to)} label={`Tasks of ${d().topic.title}`} tasks={d().tasks} today={shared.today()} topics={shared.topics() ?? []} actions={{ changed, edit: setEditingTask }} empty="No tasks in this topic yet. Add one above: it lands in this topic." />
              </section>
            </div>
          </>
        )}
      </Show>
    </Show>
  );
}

export default function Topics(): JSX.Element {
  const params = useParams<{ id?: string }>();
  return (
    <Show when={params.id} fallback={<TopicIndex />} keyed>
      {(id) => <TopicDetail id={id} />}
    </Show>
  );
}
