import { For, Show, type JSX } from 'solid-js';
import { formatDateTime } from '../lib/dates.ts';
import type { AdminMetrics } from '../lib/types.ts';
import { DataTable } from '../components/DataTable.tsx';

/** A figure tile; `alert` colours a value that needs a look (failures, a backlog). */
export function Kpi(props: { label: string; value: number | string | null | undefined; hint?: string | undefined; alert?: boolean; testId?: string }): JSX.Element {
  return (
    <div class="kpi" classList={{ alert: props.alert === true }} data-testid={props.testId}>
      <div class="value">{props.value ?? '—'}</div>
      <div class="label">{props.label}</div>
      <Show when={props.hint}>
        <div class="hint">{props.hint}</div>
      </Show>
    </div>
  );
}

/** 42 s, 7 min, 3.5 h: an age at a glance. */
export function formatAge(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

const percent = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : '—');

/**
 * The key figures of the running system, read from the metrics registries (GET /api/admin/metrics):
 * the same counters Prometheus scrapes. Under `npm start` one process holds them all; distributed,
 * each comes from a process of the service that owns it, and the card says which.
 */
export function LiveFigures(props: { figures: AdminMetrics; refresh: () => void }): JSX.Element {
  const f = () => props.figures;
  const recent = () => f().http?.recent;
  const perMinute = () => {
    const r = recent();
    return r && r.seconds > 0 ? ((60 * r.requests) / r.seconds).toFixed(1) : null;
  };
  // the window is 5 minutes once the gateway has run that long, and says so while it is shorter
  const span = () => `last ${formatAge(recent()?.seconds ?? 0)}`;
  const backlog = () => f().outbox.reduce((n, o) => n + o.pending, 0);
  const oldest = () => Math.max(0, ...f().outbox.map((o) => o.oldestPendingSeconds));
  const oneProcess = () => f().processes.length === 1 && f().missing.length === 0;
  return (
    <section class="card stack" aria-labelledby="figures-h" data-testid="admin-figures">
      <div class="row between">
        <h2 id="figures-h" style={{ margin: 0 }}>
          Live figures
        </h2>
        <button type="button" class="small" onClick={() => props.refresh()}>
          Refresh
        </button>
      </div>
      <Show when={f().missing.length > 0}>
        <div class="banner warn" role="status" data-testid="figures-missing">
          No answer from {f().missing.join(', ')}: {f().missing.length === 1 ? 'its' : 'their'} figures are missing below.
        </div>
      </Show>
      <div class="kpis">
        <Kpi testId="figure-rate" label={`requests a minute, ${span()}`} value={perMinute()} hint={f().http ? `${f().http!.requests} since start` : 'the gateway did not answer'} />
        <Kpi
          testId="figure-errors"
          label={`server errors (5xx), ${span()}`}
          value={recent() ? percent(recent()!.serverErrors, recent()!.requests) : null}
          hint={recent() ? `${recent()!.serverErrors} of ${recent()!.requests}; ${recent()!.clientErrors} refused (4xx)` : undefined}
          alert={(recent()?.serverErrors ?? 0) > 0}
        />
        <Kpi testId="figure-backlog" label="outbox backlog (events)" value={backlog()} hint={backlog() > 0 ? `oldest waiting ${formatAge(oldest())}` : 'nothing waiting'} alert={oldest() >= 60} />
        <Kpi
          testId="figure-webhook-failures"
          label="webhook deliveries failed"
          value={f().webhooks?.failed}
          hint={f().webhooks ? `${f().webhooks!.delivered} delivered, ${f().webhooks!.retried} attempts retried` : 'the webhook service did not answer'}
          alert={(f().webhooks?.failed ?? 0) > 0}
        />
        <Kpi testId="figure-cron" label="cron calls" value={f().cron?.calls} hint={f().cron ? `${f().cron!.failedCalls} failed` : 'the scheduler did not answer'} alert={(f().cron?.failedCalls ?? 0) > 0} />
      </div>
      <Show when={f().outbox.length > 0}>
        <DataTable
          testId="admin-outbox"
          caption="Outbox backlog per schema"
          rows={f().outbox}
          columns={[
            { header: 'Outbox', rowHeader: true, cell: (o) => o.schema },
            { header: 'Waiting', cell: (o) => o.pending },
            { header: 'Oldest waiting', cell: (o) => (o.pending > 0 ? formatAge(o.oldestPendingSeconds) : '—') },
          ]}
        />
      </Show>
      <Show
        when={oneProcess()}
        fallback={
          <>
            <p class="small muted">
              Each figure comes from the metrics registry of a process that runs its service: requests from a gateway, deliveries from the webhook service, cron from the scheduler, each outbox from its relay. Counts run from that process's start. With several
              replicas of a service one of them answers; Prometheus and the Grafana dashboard have the totals.
            </p>
            <DataTable
              testId="admin-processes"
              caption="Processes the figures come from"
              rows={f().processes}
              columns={[
                { header: 'Service', rowHeader: true, cell: (p) => p.services.join(', ') },
                { header: 'Process', cell: (p) => <span class="mono">{p.instance}</span> },
                { header: 'Up since', cell: (p) => formatDateTime(p.startedAt) },
              ]}
            />
          </>
        }
      >
        <For each={f().processes}>
          {(p) => (
            <p class="small muted" data-testid="figures-source">
              From this process's metrics registry (<span class="mono">{p.instance}</span>, up since {formatDateTime(p.startedAt)}): counts since it started, rates over the {span()}. Prometheus can scrape the same figures (METRICS_PORT).
            </p>
          )}
        </For>
      </Show>
      <p class="small muted">As of {formatDateTime(f().generatedAt)}.</p>
    </section>
  );
}
