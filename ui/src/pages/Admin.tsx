import { createResource, Show, type JSX } from 'solid-js';
import { ApiError, get, getOutsideTable } from '../lib/api.ts';
import { formatDateTime } from '../lib/dates.ts';
import { session } from '../lib/session.ts';
import type { UpdateStatus } from '../lib/types.ts';
import { DataTable } from '../components/DataTable.tsx';
import { ErrorBanner, Spinner } from '../components/ui.tsx';
import { Kpi, LiveFigures } from './AdminFigures.tsx';
import { ParkedEvents } from './AdminParked.tsx';

/** The update banner: always says when the check last ran, so a stale "current" is visible as such. */
function UpdateBanner(props: { update: UpdateStatus }): JSX.Element {
  const u = () => props.update;
  const checked = () => (u().checkedAt ? ` (checked ${formatDateTime(u().checkedAt)})` : '');
  return (
    <div
      data-testid="update-banner"
      role="status"
      class={`banner ${u().status === 'outdated' ? 'warn' : u().status === 'failed' ? 'error' : u().status === 'current' ? 'ok' : 'info'}`}
    >
      {u().status === 'outdated'
        ? `A newer version is available: ${u().latestVersion} (running ${u().currentVersion})${checked()}.`
        : u().status === 'current'
          ? `Up to date: version ${u().currentVersion}${checked()}.`
          : u().status === 'disabled'
            ? `Update check off: ${u().reason ?? 'DISABLE_UPDATE_CHECK'}. Running ${u().currentVersion}.`
            : u().status === 'failed'
              ? `Update check failed${checked()}: ${u().error ?? 'unknown error'}.`
              : `Update status not known yet. Running ${u().currentVersion}.`}
    </div>
  );
}

export default function Admin(): JSX.Element {
  const [stats] = createResource(() => get('/api/admin/stats'));
  // The scheduler's release check; null when it cannot be asked (the stats still show).
  const [update] = createResource(() => getOutsideTable<UpdateStatus>('/api/admin/update-status').catch(() => null));
  // The live figures load apart from the statistics: they are cheap to read again (Refresh).
  const [figures, { refetch: refreshFigures }] = createResource(() => get('/api/admin/metrics'));
  // Cron runs since start, by job, for the last-run table (the scheduler's records hold the times).
  const runsSinceStart = (job: string) => figures.latest?.cron?.jobs.find((j) => j.job === job);
  const updateStatus = () => (stats()?.update as UpdateStatus | null | undefined) ?? update() ?? null;
  const forbidden = () => stats.error instanceof ApiError && stats.error.status === 403;
  return (
    <>
      <div class="page-head">
        <h1>{session.me()?.isAdmin && !forbidden() ? 'Administration' : 'Not allowed'}</h1>
      </div>
      <Show when={session.me()?.isAdmin && !forbidden()} fallback={<div class="banner error" role="alert">This page is for administrators. Your account is not listed in ADMIN_USER_IDS.</div>}>
        <Show when={!stats.error} fallback={<ErrorBanner error={stats.error} />}>
          <Show when={stats()} fallback={<Spinner />}>
            {(s) => (
              <div class="stack" data-testid="admin-stats">
                <Show when={updateStatus()}>{(u) => <UpdateBanner update={u()} />}</Show>
                <Show when={!figures.error} fallback={<ErrorBanner error={figures.error} />}>
                  <Show when={figures.latest} fallback={<Spinner />}>
                    {(f) => <LiveFigures figures={f()} refresh={() => void refreshFigures()} />}
                  </Show>
                </Show>
                <ParkedEvents />
                <section class="card">
                  <h2>Users</h2>
                  <div class="kpis">
                    <Kpi label="total" value={s().users.total} />
                    <Kpi label="new, 7 days" value={s().users.new7d} />
                    <Kpi label="new, 30 days" value={s().users.new30d} />
                    <Kpi label="active, 7 days" value={s().users.active7d} />
                    <Kpi label="active, 30 days" value={s().users.active30d} />
                    <Kpi label="with a second factor" value={s().users.withSecondFactor} />
                  </div>
                  <Show when={s().users.byProvider.length > 0}>
                    <h3 style={{ 'margin-top': '1rem' }}>By sign-in provider</h3>
                    <DataTable
                      headless
                      caption="Users by sign-in provider"
                      rows={s().users.byProvider}
                      columns={[
                        { header: 'Provider', rowHeader: true, cell: (p) => p.provider },
                        { header: 'Users', cell: (p) => p.users },
                      ]}
                    />
                  </Show>
                </section>
                <section class="card">
                  <h2>Tasks</h2>
                  <Show when={s().tasks} fallback={<p class="muted">The tasks service did not answer.</p>}>
                    {(t) => (
                      <div class="kpis">
                        <Kpi label="tasks" value={t().tasksTotal} />
                        <Kpi label="open" value={t().tasksOpen} />
                        <Kpi label="completed" value={t().tasksCompleted} />
                        <Kpi label="completions, 7 days" value={t().completions7d} />
                        <Kpi label="completions, 30 days" value={t().completions30d} />
                        <Kpi label="tasks per user" value={t().averageTasksPerUser?.toFixed(1)} />
                      </div>
                    )}
                  </Show>
                </section>
                <Show when={s().tasks?.topUsers?.length}>
                  <section class="card">
                    <h2>Top 10 users by coins</h2>
                    <DataTable
                      testId="admin-top-users"
                      caption="Top 10 users by coins"
                      rows={s().tasks?.topUsers ?? []}
                      columns={[
                        { header: 'User', rowHeader: true, cell: (u) => u.name ?? `${u.userId.slice(0, 8)}…` },
                        { header: 'Coins', cell: (u) => u.coins },
                        { header: 'Level', cell: (u) => u.level },
                        { header: 'Completed', cell: (u) => u.tasksCompleted },
                      ]}
                    />
                  </section>
                </Show>
                <Show when={s().tasks?.achievements}>
                  {(list) => (
                    <section class="card">
                      <h2>Achievements unlocked</h2>
                      <DataTable
                        headless
                        testId="admin-achievements"
                        caption="Achievements: how many users unlocked each"
                        rows={list()}
                        columns={[
                          { header: 'Achievement', rowHeader: true, cell: (a) => a.title },
                          { header: 'Share of users', cell: (a) => <meter min={0} max={Math.max(1, s().tasks?.usersWithTasks ?? 1)} value={a.users} aria-label={`${a.title}: ${a.users} users`} /> },
                          { header: 'Users', cell: (a) => a.users },
                        ]}
                      />
                    </section>
                  )}
                </Show>
                <section class="card">
                  <h2>Cron runs</h2>
                  <Show when={s().cron} fallback={<p class="muted">The scheduler did not answer.</p>}>
                    {(c) => (
                      <Show when={c().jobs.length > 0} fallback={<p class="muted">No cron run yet.</p>}>
                        <DataTable
                          testId="admin-cron-runs"
                          caption="Last run of each cron job"
                          rows={c().jobs}
                          columns={[
                            { header: 'Job', rowHeader: true, cell: (j) => j.job },
                            { header: 'Last run', cell: (j) => formatDateTime(j.startedAt) },
                            { header: 'Status', cell: (j) => j.status },
                            { header: 'Duration', cell: (j) => (j.durationMs === null ? '—' : `${j.durationMs} ms`) },
                            { header: 'Sent', cell: (j) => j.notifications ?? '—' },
                            { header: 'Runs since start', cell: (j) => runsSinceStart(j.job)?.runs ?? '—' },
                            { header: 'Failed since start', cell: (j) => runsSinceStart(j.job)?.failed ?? '—' },
                          ]}
                        />
                      </Show>
                    )}
                  </Show>
                </section>
                <p class="small muted">Generated {formatDateTime(s().generatedAt)}. Counts only: no task content is shown here.</p>
              </div>
            )}
          </Show>
        </Show>
      </Show>
    </>
  );
}
