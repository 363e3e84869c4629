import { useLocation } from '@solidjs/router';
import { createMemo, createResource, For, lazy, Match, Show, Switch, type JSX } from 'solid-js';
import { ApiError, get } from '../lib/api.ts';
import { shared } from '../lib/data.ts';
import { addDays, formatAxisDate, formatDate, localDate } from '../lib/dates.ts';
import { gameStats } from '../lib/game.ts';
import { Empty, ErrorBanner, Spinner, Tabs } from '../components/ui.tsx';
import { Icon } from '../components/icons.tsx';

// The chart library is only downloaded when a chart is on screen.
const Chart = lazy(() => import('../components/Chart.tsx').then((m) => ({ default: m.Chart })));

const TABS = [
  { href: '/stats', label: 'Statistics' },
  { href: '/achievements', label: 'Achievements' },
  { href: '/review', label: 'Weekly review' },
];

/** null when the endpoint does not exist on this server (yet): the screen says so instead of failing. */
async function optional<T>(load: () => Promise<T>): Promise<T | null> {
  try {
    return await load();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND') return null;
    throw err;
  }
}

function Stats(): JSX.Element {
  const DAYS = 30;
  // Completions per day over the last 30 days, from the completed tasks in the user's timezone.
  const [completed] = createResource(async () => (await get('/api/tasks', { query: { completed: true, limit: 500 } })).tasks);
  const [open] = createResource(async () => (await get('/api/tasks', { query: { completed: false, limit: 1 } })).total);
  const series = createMemo(() => {
    // The game API counts every completion (recurring ones too) per local day; without it, the
    // completed tasks are counted in the user's timezone.
    const server = gameStats()?.completionsByDay;
    if (server && server.length) return { labels: server.map((d) => formatAxisDate(d.date)), values: server.map((d) => d.count) };
    const today = shared.today();
    const tz = shared.timezone();
    const days = Array.from({ length: DAYS }, (_, i) => addDays(today, i - DAYS + 1));
    const counts = new Map(days.map((d) => [d, 0]));
    for (const t of completed() ?? []) {
      if (!t.completedAt) continue;
      const d = localDate(t.completedAt, tz);
      if (counts.has(d)) counts.set(d, counts.get(d)! + 1);
    }
    return { labels: days.map(formatAxisDate), values: days.map((d) => counts.get(d)!) };
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
        <Show when={gameStats()}>
          {(g) => (
            <>
              <div class="kpi">
                <div class="value">{g().streak.current}</div>
                <div class="label">day streak (best {g().streak.max})</div>
              </div>
              <div class="kpi">
                <div class="value">{g().questsCompleted}</div>
                <div class="label">quests completed</div>
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

function Achievements(): JSX.Element {
  const [data] = createResource(() => optional(() => get('/api/achievements')));
  return (
    <Show when={!data.error} fallback={<ErrorBanner error={data.error} />}>
      <Show when={data() !== undefined} fallback={<Spinner />}>
        <Show when={data()} fallback={<Empty>Achievements are not available on this server yet.</Empty>}>
          {(d) => (
            <>
              <p data-testid="achievements-count">
                {d().unlocked} of {d().total} unlocked
              </p>
              <div class="grid">
                <For each={d().achievements}>
                  {(a) => (
                    <div class="card achievement" classList={{ locked: !a.unlocked }} data-testid="achievement">
                      {/* An SVG star (filled once unlocked, coloured by rarity): glyphs like ♛ are missing from some fonts. */}
                      <span class={`medal ${a.rarity}`} aria-hidden="true">
                        <Icon name="star" size={28} filled={a.unlocked} />
                      </span>
                      <div>
                        <strong>{a.secret && !a.unlocked ? 'Secret achievement' : a.title}</strong>
                        <div class="small muted">{a.secret && !a.unlocked ? 'Keep going to find out.' : a.description}</div>
                        <div class="small muted">
                          {a.rarity} · {a.reward} coins
                          {a.unlockedAt ? ` · unlocked ${formatDate(localDate(a.unlockedAt, shared.timezone()))}` : ''}
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

function WeeklyReview(): JSX.Element {
  const [data] = createResource(() => optional(() => get('/api/review/weekly')));
  const review = () => data() ?? null;
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
                  <div class="value">{r().completions}</div>
                  <div class="label">completed (week before: {r().previousWeekCompletions})</div>
                </div>
                <div class="kpi">
                  <div class="value">{r().coinsEarned}</div>
                  <div class="label">coins earned</div>
                </div>
                <div class="kpi">
                  <div class="value">{r().postponements}</div>
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
                          {t.title}: {t.completions}
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
