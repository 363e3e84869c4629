import { A } from '@solidjs/router';
import { createMemo, createResource, createSignal, Show, type JSX, type ResourceFetcherInfo } from 'solid-js';
import { get, qs } from '../lib/api.ts';
import { shared } from '../lib/data.ts';
import { addDays, formatDate } from '../lib/dates.ts';
import { refreshGame } from '../lib/game.ts';
import { lastGood, refetchOnReconnect } from '../lib/connection.ts';
import { session } from '../lib/session.ts';
import type { Task } from '../lib/types.ts';
import { isDeleted } from '../lib/undoable-delete.ts';
import { keepJustCompleted } from '../lib/just-completed.ts';
import { reconciled } from '../lib/reconciled.ts';
import { QuickAdd, TaskList, type TaskActions } from '../components/TaskList.tsx';
import { TaskPanel } from '../components/TaskPanel.tsx';
import { EnergyCheckin } from '../components/EnergyCheckin.tsx';
import { QuestCard, StreakCard } from '../components/Quest.tsx';
import { ErrorBanner, Spinner } from '../components/ui.tsx';

function greeting(): string {
  const h = new Date().getHours();
  return h < 5 ? 'Good night' : h < 12 ? 'Good morning' : h < 18 ? 'Good afternoon' : 'Good evening';
}

export default function Dashboard(): JSX.Element {
  const today = () => shared.today();
  // Open tasks due up to today (overdue included); the list is small, the split happens here.
  // Read as `.latest`: a refetch after a change keeps the page (and quick add's focus) in place.
  const [due, { refetch }] = createResource(
    today,
    async (t, { value, refetching }: ResourceFetcherInfo<Task[]>) => keepJustCompleted(refetching ? value : undefined, (await get<{ tasks: Task[] }>(`/api/tasks${qs({ completed: false, dueBefore: t, snoozed: false, limit: 200 })}`)).tasks),
    { storage: reconciled },
  );
  // Offline: the last list stays (a failed refetch never throws into the page), and it loads again when back.
  const dueNow = lastGood(due);
  refetchOnReconnect(refetch);
  const open = () => (dueNow() ?? []).filter((t) => !isDeleted(t.id));
  const overdue = createMemo(() => open().filter((t) => (t.type === 'RECURRING' ? t.nextDueDate : t.dueDate)! < today()));
  const dueToday = createMemo(() => open().filter((t) => (t.type === 'RECURRING' ? t.nextDueDate : t.dueDate) === today()));
  const changed = () => {
    refreshGame();
    return refetch();
  };
  const [editing, setEditing] = createSignal<Task | null>(null);
  const actions: TaskActions = { changed, edit: setEditing };
  const name = () => session.me()?.name?.split(' ')[0];

  return (
    <>
      <div class="page-head">
        <div>
          <h1>
            {greeting()}
            {name() ? `, ${name()}` : ''}
          </h1>
          <p class="muted" style={{ margin: 0 }}>
            {formatDate(today())} · {shared.timezone()}
          </p>
        </div>
      </div>
      <div class="stack">
        {/* Capture first: quick add leads the page, above the day's summary and the game cards. */}
        <section class="card" data-testid="today-quick-add">
          <QuickAdd topics={shared.topics() ?? []} today={today()} onCreated={changed} />
        </section>
        <Show when={shared.profile()?.totalTasksCreated === 0}>
          <div class="banner info" data-testid="onboarding-hint">
            New here? <A href="/onboarding">Take the two-minute setup</A>: timezone, a first task, reminders.
          </div>
        </Show>
        {/* Morning-briefing style summary: the same facts the 08:00 notification carries. */}
        <section class="card" aria-labelledby="brief-h" data-testid="briefing">
          <h2 id="brief-h">Your day</h2>
          <Show when={dueNow() !== undefined} fallback={due.error ? <p class="muted" style={{ margin: 0 }}>Not loaded: the server cannot be reached.</p> : <Spinner />}>
            <p style={{ margin: 0 }}>
              {dueToday().length === 0 && overdue().length === 0
                ? 'Nothing is due today. '
                : `${dueToday().length} task${dueToday().length === 1 ? '' : 's'} due today${overdue().length ? `, ${overdue().length} overdue` : ''}. `}
            </p>
          </Show>
        </section>
        <div class="grid">
          <QuestCard onChange={changed} />
          <StreakCard />
          <EnergyCheckin />
        </div>
        <Show when={!due.error || dueNow() !== undefined} fallback={<ErrorBanner error={due.error} />}>
          <Show when={overdue().length > 0}>
            <section class="card" aria-labelledby="overdue-h">
              <h2 id="overdue-h">Overdue</h2>
              <TaskList label="Overdue tasks" tasks={overdue()} today={today()} topics={shared.topics() ?? []} actions={actions} />
            </section>
          </Show>
          <section class="card" aria-labelledby="today-h">
            <div class="row between">
              <h2 id="today-h">Due today</h2>
              <A href="/tasks" class="small">
                All tasks →
              </A>
            </div>
            <Show when={dueNow() !== undefined} fallback={<Spinner />}>
              <TaskList label="Tasks due today" tasks={dueToday()} today={today()} topics={shared.topics() ?? []} actions={actions} empty={<>Nothing due today. Plan tomorrow ({formatDate(addDays(today(), 1))}) on the Tasks page.</>} />
            </Show>
          </section>
        </Show>
      </div>
      <Show when={editing()} keyed>
        {(t) => <TaskPanel editing={t} topics={shared.topics() ?? []} today={today()} onSaved={() => (setEditing(null), changed())} onClose={() => setEditing(null)} />}
      </Show>
    </>
  );
}
