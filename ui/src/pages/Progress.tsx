import { useLocation } from '@solidjs/router';
import { createMemo, createResource, For, lazy, Match, Show, Switch, type JSX } from 'solid-js';
import { ApiError, get, qs } from '../lib/api.ts';
import { shared } from '../lib/data.ts';
import { addDays, formatDate } from '../lib/dates.ts';
import { gameSummary } from '../lib/game.ts';
import type { Task } from '../lib/types.ts';
import { Empty, ErrorBanner, Spinner, Tabs } from '../components/ui.tsx';

// The chart library is only downloaded when a chart is on screen.
const Chart = lazy(() => import('../components/Chart.tsx').then((m) => ({ default: m.Chart })));

const TABS = [
  { href: '/stats', label: 'Statistics' },
  { href: '/achievements', label: 'Achievements' },
  { href: '/review', label: 'Weekly review' },
];

/** null when the endpoint does not exist on this server (yet): the screen says so instead of failing. */
async function optional<T>(path: string): Promise<T | null> {
  try {
    return await get<T>(path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND') return null;
    throw err;
  }
}

function localDay(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(iso));
}

function Stats(): JSX.Element {
  const DAYS = 30;
  // Completions per day over the last 30 days, from the completed tasks in the user's timezone.
  const [completed] = createResource(async () => (await get<{ tasks: Task[] }>(`/api/tasks${qs({ completed: true, limit: 500 })}`)).tasks);
  const [open] = createResource(async () => (await get<{ tasks: Task[]; total: number }>(`/api/tasks${qs({ completed: false, limit: 1 })}`)).total);
  const series = createMemo(() => {
    const today = shared.today();
    const tz = shared.timezone();
    const days = Array.from({ length: DAYS }, (_, i) => addDays(today, i - DAYS + 1));
    const counts = new Map(days.map((d) => [d, 0]));
    for (const t of completed() ?? []) {
      if (!t.completedAt) continue;
      const d = localDay(t.completedAt, tz);
      if (counts.has(d)) counts.set(d, counts.get(d)! + 1);
    }
    return { labels: days.map((d) => d.slice(5)), values: days.map((d) => counts.get(d)!) };
  });
  const byPriority = createMemo(() => {
    const c = { HIGH: 0, NORMAL: 0, SOMEDAY: 0 } as Record<string, number>;
    for (const t of completed() ?? []) c[t.priority] = (c[t.priority] ?? 0) + 1;
    return c;
  });
  const total30 = () => series().values.reduce((a, b) => a + b, 0);
  return (
    <div class="stack">
      <div class="kpis">
        <div class="kpi">
          <div class="value">{total30()}</div>
          <div class="label">completed, last 30 days</div>
        </div>
        <div class="kpi">
          <div class="value">{open() ?? '…'}</div>
          <div class="label">open tasks</div>
        </div>
        <Show when={gameSummary()}>
          {(g) => (
            <>
              <div class="kpi">
                <div class="value">{g().streak}</div>
                <div class="label">day streak</div>
              </div>
              <div class="kpi">
                <div class="value">{g().coins}</div>
                <div class="label">coins · level {g().level}</div>
              </div>
            </>
          )}
        </Show>
      </div>
      <section class="card" aria-labelledby="chart-h">
        <h2 id="chart-h">Completions per day</h2>
        <Show when={!completed.error} fallback={<ErrorBanner error={completed.error} />}>
          <Show when={completed() !== undefined} fallback={<Spinner />}>
            <Chart title={`Completions per day over the last ${DAYS} days: ${total30()} in total`} labels={series().labels} series={[{ label: 'Completed', values: series().values, bars: true }]} />
          </Show>
        </Show>
      </section>
      <section class="card" aria-labelledby="prio-h">
        <h2 id="prio-h">Completed by priority</h2>
        <Show when={completed() !== undefined} fallback={<Spinner />}>
          <Chart title="Completed tasks by priority" labels={['High', 'Normal', 'Someday']} series={[{ label: 'Tasks', values: [byPriority().HIGH!, byPriority().NORMAL!, byPriority().SOMEDAY!], bars: true }]} height={180} />
        </Show>
      </section>
    </div>
  );
}

interface Achievement {
  key: string;
  name: string;
  description: string;
  rarity: string;
  secret?: boolean;
  unlockedAt: string | null;
}

const MEDAL: Record<string, string> = { common: '★', rare: '★★', epic: '★★★', legendary: '♛' };

function Achievements(): JSX.Element {
  const [data] = createResource(() => optional<{ achievements: Achievement[] }>('/api/achievements'));
  const unlocked = () => (data()?.achievements ?? []).filter((a) => a.unlockedAt).length;
  return (
    <Show when={!data.error} fallback={<ErrorBanner error={data.error} />}>
      <Show when={data() !== undefined} fallback={<Spinner />}>
        <Show when={data()} fallback={<Empty>Achievements are not available on this server yet.</Empty>}>
          {(d) => (
            <>
              <p>
                {unlocked()} of {d().achievements.length} unlocked
              </p>
              <div class="grid">
                <For each={d().achievements}>
                  {(a) => (
                    <div class="card achievement" classList={{ locked: !a.unlockedAt }} data-testid="achievement">
                      <span class="medal" aria-hidden="true">
                        {a.unlockedAt ? (MEDAL[a.rarity] ?? '★') : '☆'}
                      </span>
                      <div>
                        <strong>{a.secret && !a.unlockedAt ? 'Secret achievement' : a.name}</strong>
                        <div class="small muted">{a.secret && !a.unlockedAt ? 'Keep going to find out.' : a.description}</div>
                        <div class="small muted">
                          {a.rarity}
                          {a.unlockedAt ? ` · unlocked ${formatDate(a.unlockedAt)}` : ''}
                        </div>
                      </div>
                    </div>
                  )}
                </For>
              </div>
            </>
          )}
        </Show>
      </Show>
    </Show>
  );
}

interface Review {
  weekStart: string;
  weekEnd: string;
  completed: number;
  completedLastWeek: number;
  postponed: number;
  coinsEarned: number;
  streakCurrent: number;
  streakMax: number;
  tasksCreated: number;
  topTopics: { title: string; completed: number }[];
}

function WeeklyReview(): JSX.Element {
  const [data] = createResource(() => optional<{ review: Review } | Review>('/api/review'));
  const review = () => {
    const d = data();
    return d ? ('review' in d ? d.review : d) : null;
  };
  return (
    <Show when={!data.error} fallback={<ErrorBanner error={data.error} />}>
      <Show when={data() !== undefined} fallback={<Spinner />}>
        <Show when={review()} fallback={<Empty>The weekly review is not available on this server yet.</Empty>}>
          {(r) => (
            <div class="stack" data-testid="weekly-review">
              <p class="muted">
                {formatDate(r().weekStart)} – {formatDate(r().weekEnd)}
              </p>
              <div class="kpis">
                <div class="kpi">
                  <div class="value">{r().completed}</div>
                  <div class="label">completed (last week {r().completedLastWeek})</div>
                </div>
                <div class="kpi">
                  <div class="value">{r().coinsEarned}</div>
                  <div class="label">coins earned</div>
                </div>
                <div class="kpi">
                  <div class="value">{r().postponed}</div>
                  <div class="label">postponed</div>
                </div>
                <div class="kpi">
                  <div class="value">{r().tasksCreated}</div>
                  <div class="label">tasks created</div>
                </div>
                <div class="kpi">
                  <div class="value">
                    {r().streakCurrent} / {r().streakMax}
                  </div>
                  <div class="label">streak now / best</div>
                </div>
              </div>
              <Show when={r().topTopics.length > 0}>
                <section class="card">
                  <h2>Top topics</h2>
                  <ol>
                    <For each={r().topTopics}>
                      {(t) => (
                        <li>
                          {t.title}: {t.completed}
                        </li>
                      )}
                    </For>
                  </ol>
                </section>
              </Show>
            </div>
          )}
        </Show>
      </Show>
    </Show>
  );
}

export default function Progress(): JSX.Element {
  const location = useLocation();
  const current = () => (location.pathname === '/progress' ? '/stats' : location.pathname);
  return (
    <>
      <div class="page-head">
        <h1>Progress</h1>
      </div>
      <Tabs items={TABS} current={current()} />
      <Switch>
        <Match when={current() === '/achievements'}>
          <Achievements />
        </Match>
        <Match when={current() === '/review'}>
          <WeeklyReview />
        </Match>
        <Match when={true}>
          <Stats />
        </Match>
      </Switch>
    </>
  );
}
