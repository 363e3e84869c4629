import { createResource, For, Show, type JSX } from 'solid-js';
import { ApiError, get } from '../lib/api.ts';
import { formatDateTime } from '../lib/dates.ts';
import { session } from '../lib/session.ts';
import type { AdminStats, UpdateStatus } from '../lib/types.ts';
import { ErrorBanner, Spinner } from '../components/ui.tsx';

function Kpi(props: { label: string; value: number | string | null | undefined }): JSX.Element {
  return (
    <div class="kpi">
      <div class="value">{props.value ?? '—'}</div>
      <div class="label">{props.label}</div>
    </div>
  );
}

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
            ? `Update check disabled (DISABLE_UPDATE_CHECK). Running ${u().currentVersion}.`
            : u().status === 'failed'
              ? `Update check failed${checked()}: ${u().error ?? 'unknown error'}.`
              : `Update status not known yet. Running ${u().currentVersion}.`}
    </div>
  );
}

export default function Admin(): JSX.Element {
  const [stats] = createResource(() => get<AdminStats>('/api/admin/stats'));
  // The scheduler's release check; null when it cannot be asked (the stats still show).
  const [update] = createResource(() => get<UpdateStatus>('/api/admin/update-status').catch(() => null));
  const updateStatus = () => (stats()?.update as UpdateStatus | null | undefined) ?? update() ?? null;
  const forbidden = () => stats.error instanceof ApiError && stats.error.status === 403;
  return (
    <>
      <div class="page-head">
        <h1>Administration</h1>
      </div>
      <Show when={session.me()?.isAdmin && !forbidden()} fallback={<div class="banner error" role="alert">Administrators only. Your account is not listed in ADMIN_USER_IDS.</div>}>
        <Show when={!stats.error} fallback={<ErrorBanner error={stats.error} />}>
          <Show when={stats()} fallback={<Spinner />}>
            {(s) => (
              <div class="stack" data-testid="admin-stats">
                <Show when={updateStatus()}>{(u) => <UpdateBanner update={u()} />}</Show>
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
                    <div class="table-wrap">
                      <table>
                        <tbody>
                          <For each={s().users.byProvider}>
                            {(p) => (
                              <tr>
                                <th scope="row">{p.provider}</th>
                                <td>{p.users}</td>
                              </tr>
                            )}
                          </For>
                        </tbody>
                      </table>
                    </div>
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
                <p class="small muted">Generated {formatDateTime(s().generatedAt)}. Counts only: no task content is shown here.</p>
              </div>
            )}
          </Show>
        </Show>
      </Show>
    </>
  );
}
