import { A } from '@solidjs/router';
import { createMemo, createResource, createSignal, Show, type JSX, type ResourceFetcherInfo } from 'solid-js';
import { read } from '../lib/cache.ts';
import { shared } from '../lib/data.ts';
import { addDays, formatDate } from '../lib/dates.ts';
import { refreshGame } from '../lib/game.ts';
import { lastGood, refetchOnReconnect } from '../lib/connection.ts';
import { session } from '../lib/session.ts';
import type { Task } from '../lib/types.ts';
import { isDeleted } from '../lib/undoable-delete.ts';
import { keepJustCompleted } from '../lib/just-completed.ts';
import { reconciled } from '../lib/reconciled.ts';
import { byPriorityThenDate, effectiveDue, isPaused } from '../lib/task-groups.ts';
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
    async (t, { value, refetching }: ResourceFetcherInfo<Task[]>) => keepJustCompleted(refetching ? value : undefined, (await read('/api/tasks', { query: { completed: false, dueBefore: t, snoozed: false, limit: 200 } })).tasks),
    { storage: reconciled },
  );
  // Offline: the last list stays (a failed refetch never throws into the page), and it loads again when back.
  const dueNow = lastGood(due);
  refetchOnReconnect(refetch);
  // Paused tasks wait on purpose (snoozed ones the server leaves out already); the rest by priority (bug 10).
  const open = () => (dueNow() ?? []).filter((t) => !isDeleted(t.id) && !isPaused(t, today()));
  const overdue = createMemo(() => open().filter((t) => effectiveDue(t)! < today()).sort(byPriorityThenDate));
  const dueToday = createMemo(() => open().filter((t) => effectiveDue(t) === today()).sort(byPriorityThenDate));
  const changed = () => {
    refreshGame();
    return refetch();
  };
  const [editing, setEditing] = createSignal<Task | null>(null);
  const actions: TaskActions = { changed, edit: setEditing };
  const name = () => session.me()?.name?.split(' ')[0];

  const summary = () =>
    dueToday().length === 0 && overdue().length === 0 ? 'Nothing is due today.' : `${dueToday().length} due today${overdue().length ? `, ${overdue().length} overdue` : ''}.`;

  // Phone first: what is due leads (overdue, then today, each by priority), then the quest; the game
  // cards come last and are compact on a phone, so tasks are on the first screen at 390 × 844.
  return (
    <>
      <div class="page-head today-head">
        <div>
          <h1>
            {greeting()}
            {name() ? `, ${name()}` : ''}
          </h1>
          {/* Morning-briefing style summary: the same facts the 08:00 notification carries. */}
          <p class="muted" style={{ margin: 0 }} data-testid="briefing">
            {formatDate(today())} · {shared.timezone()}
            {' · '}
            <Show when={dueNow() !== undefined} fallback={due.error ? 'tasks not loaded: the server cannot be reached.' : 'loading…'}>
              {summary()}
            </Show>
          </p>
        </div>
      </div>
      <div class="stack today">
        {/* Capture first: quick add leads the page, above what is due and the game cards. */}
        <section class="card" data-testid="today-quick-add">
          <QuickAdd topics={shared.topics() ?? []} today={today()} onCreated={changed} />
        </section>
        <Show when={shared.profile()?.totalTasksCreated === 0}>
          <div class="banner info" data-testid="onboarding-hint">
            New here? <A href="/onboarding">Take the two-minute setup</A>: timezone, a first task, reminders.
          </div>
        </Show>
        <Show when={!due.error || dueNow() !== undefined} fallback={<ErrorBanner error={due.error} />}>
          <Show when={overdue().length > 0}>
            <section class="card" aria-labelledby="overdue-h" data-testid="today-overdue">
              <h2 id="overdue-h" class="overdue">
                Overdue <span class="muted small">{overdue().length}</span>
              </h2>
              <TaskList label="Overdue tasks" tasks={overdue()} today={today()} topics={shared.topics() ?? []} actions={actions} />
            </section>
          </Show>
          <section class="card" aria-labelledby="today-h" data-testid="today-due">
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
        <QuestCard onChange={changed} />
        <div class="grid game-cards">
          <StreakCard />
          <EnergyCheckin />
        </div>
      </div>
      <Show when={editing()} keyed>
        {(t) => <TaskPanel editing={t} topics={shared.topics() ?? []} today={today()} onSaved={() => (setEditing(null), changed())} onClose={() => setEditing(null)} />}
      </Show>
    </>
  );
}
