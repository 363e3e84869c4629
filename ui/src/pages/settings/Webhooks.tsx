import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, get, patch, post, request, type BodyOf } from '../../lib/api.ts';
import { formatDateTime } from '../../lib/dates.ts';
import { toast, toastError } from '../../lib/toast.ts';
import { TASK_EVENTS, type WebhookEndpoint } from '../../lib/types.ts';
import { AsyncButton, dismissable, Empty, ErrorBanner, Field, FormActions, Spinner } from '../../components/ui.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import { deleteWithUndo, isDeleted } from '../../lib/undoable-delete.ts';

function EventFilter(props: { value: string[]; onChange: (v: string[]) => void }): JSX.Element {
  return (
    <fieldset>
      <legend>Events</legend>
      <p class="small muted" style={{ margin: '0 0 0.4rem' }}>
        None selected means every task event.
      </p>
      <div class="row">
        <For each={TASK_EVENTS}>
          {(ev) => (
            <label class="check">
              <input type="checkbox" checked={props.value.includes(ev)} onChange={(e) => props.onChange(e.currentTarget.checked ? [...props.value, ev] : props.value.filter((x) => x !== ev))} />
              <span class="mono">{ev}</span>
            </label>
          )}
        </For>
      </div>
    </fieldset>
  );
}

function EndpointForm(props: { endpoint?: WebhookEndpoint; onSaved: () => void; onCancel?: () => void }): JSX.Element {
  const [url, setUrl] = createSignal(props.endpoint?.url ?? '');
  const [secret, setSecret] = createSignal('');
  const [removeSecret, setRemoveSecret] = createSignal(false);
  const [events, setEvents] = createSignal<WebhookEndpoint['events']>(props.endpoint?.events ?? []);
  const [error, setError] = createSignal<ApiError | null>(null);
  async function save(e: SubmitEvent) {
    e.preventDefault();
    setError(null);
    const body: BodyOf<'POST', '/api/settings/webhooks'> = { url: url().trim(), events: events() };
    // An empty secret field keeps the stored secret on edit; "remove" sends null.
    if (secret()) body.secret = secret();
    else if (removeSecret()) body.secret = null;
    try {
      if (props.endpoint) await patch('/api/settings/webhooks/:id', { params: { id: props.endpoint.id }, body });
      else await post('/api/settings/webhooks', { body });
      toast(props.endpoint ? 'Webhook saved' : 'Webhook added');
      setUrl('');
      setSecret('');
      setEvents([]);
      props.onSaved();
    } catch (err) {
      if (err instanceof ApiError) setError(err);
      else toastError(err);
    }
  }
  return (
    <form class="stack" ref={(el) => props.onCancel && dismissable(el, props.onCancel)} onSubmit={(e) => void save(e)} aria-label={props.endpoint ? 'Edit webhook' : 'Add webhook'} data-testid="webhook-form">
      <div class="form-grid">
        <Field label="Endpoint URL" hint="HTTPS. Receives a JSON POST per task event." error={error()?.fieldError('url')}>
          {(id, d) => <input id={id} aria-describedby={d} type="url" inputmode="url" placeholder="https://example.com/hooks/tasks" value={url()} onInput={(e) => setUrl(e.currentTarget.value)} required maxlength="2048" />}
        </Field>
        <Field
          label={props.endpoint?.hasSecret ? 'New signing secret (optional)' : 'Signing secret (optional)'}
          hint="Signs each body: X-Service-Signature: sha256=<hex HMAC>. At least 8 characters."
          error={error()?.fieldError('secret')}
        >
          {(id, d) => <input id={id} aria-describedby={d} type="password" autocomplete="new-password" value={secret()} onInput={(e) => setSecret(e.currentTarget.value)} maxlength="256" />}
        </Field>
      </div>
      <Show when={props.endpoint?.hasSecret}>
        <label class="check">
          <input type="checkbox" checked={removeSecret()} onChange={(e) => setRemoveSecret(e.currentTarget.checked)} /> Remove the signing secret
        </label>
      </Show>
      <EventFilter value={events()} onChange={setEvents} />
      <Show when={error() && (error()!.issues.length === 0 || (!error()!.fieldError('url') && !error()!.fieldError('secret')))}>
        <ErrorBanner error={error()} />
      </Show>
      <FormActions submitLabel={props.endpoint ? 'Save' : 'Add webhook'} onCancel={props.onCancel} />
    </form>
  );
}

function DeliveryLog(props: { endpoint: WebhookEndpoint; version: number }): JSX.Element {
  const [log, { refetch }] = createResource(
    () => [props.endpoint.id, props.version] as const,
    async ([id]) => (await get('/api/settings/webhooks/:id/deliveries', { params: { id }, query: { limit: 20 } })).deliveries,
  );
  return (
    <div data-testid="delivery-log">
      <div class="row between">
        <h4 style={{ margin: '0.5rem 0' }}>Recent deliveries</h4>
        <button type="button" class="small ghost" onClick={() => void refetch()}>
          Refresh
        </button>
      </div>
      <Show when={!log.error} fallback={<ErrorBanner error={log.error} />}>
        <Show when={log()} fallback={<Spinner />}>
          <Show when={log()!.length > 0} fallback={<p class="small muted">No deliveries yet. Send test delivers a sample event now.</p>}>
            <DataTable
              caption={`Recent deliveries to ${props.endpoint.url}`}
              rowTestId="delivery-row"
              rows={log()!}
              columns={[
                { header: 'When', cell: (d) => formatDateTime(d.createdAt) },
                { header: 'Event', cell: (d) => <span class="mono">{d.event}</span> },
                {
                  header: 'Result',
                  cell: (d) => (
                    <div>
                      <span class={`badge ${d.status === 'delivered' ? 'ok' : d.status === 'failed' ? 'high' : ''}`}>{d.status}</span>{' '}
                      <span class="small muted">
                        {d.responseStatus ? `HTTP ${d.responseStatus}` : ''}
                        {d.durationMs !== null ? ` · ${d.durationMs} ms` : ''}
                        {d.attempts > 1 ? ` · ${d.attempts} attempts` : ''}
                      </span>
                      <Show when={d.error}>
                        <div class="small" style={{ color: 'var(--danger)' }}>
                          {d.error}
                        </div>
                      </Show>
                    </div>
                  ),
                },
                {
                  header: 'Actions',
                  hideHeader: true,
                  cell: (d) => (
                    <AsyncButton
                      class="small"
                      action={async () => {
                        await post('/api/settings/webhooks/:id/deliveries/:deliveryId/redeliver', { params: { id: props.endpoint.id, deliveryId: d.id } });
                        toast('Delivery queued again');
                        void refetch();
                      }}
                    >
                      Redeliver
                    </AsyncButton>
                  ),
                },
              ]}
            />
          </Show>
        </Show>
      </Show>
    </div>
  );
}

function EndpointCard(props: { endpoint: WebhookEndpoint; changed: () => void }): JSX.Element {
  const [editing, setEditing] = createSignal(false);
  const [showLog, setShowLog] = createSignal(false);
  const [version, setVersion] = createSignal(0);
  const e = () => props.endpoint;
  return (
    <li class="card" data-testid="webhook-endpoint">
      <div class="row between">
        <div style={{ 'min-width': 0 }}>
          <div class="mono" style={{ 'overflow-wrap': 'anywhere' }}>
            {e().url}
          </div>
          <div class="meta row small muted" style={{ 'margin-top': '0.25rem' }}>
            <span class={`badge ${e().enabled ? 'ok' : ''}`}>{e().enabled ? 'enabled' : 'disabled'}</span>
            <span>{e().events.length === 0 ? 'all events' : e().events.join(', ')}</span>
            <span>{e().hasSecret ? 'signed' : 'unsigned'}</span>
            <Show when={e().failingSince}>
              <span class="badge high">failing since {formatDateTime(e().failingSince)}</span>
            </Show>
            <Show when={e().disabledReason}>
              <span class="badge high">{e().disabledReason}</span>
            </Show>
          </div>
        </div>
        <div class="row">
          <AsyncButton
            class="small"
            action={async () => {
              const d = await post('/api/settings/webhooks/:id/test', { params: { id: e().id } });
              toast(d.status === 'delivered' ? `Test delivered (HTTP ${d.responseStatus})` : `Test ${d.status}${d.error ? `: ${d.error}` : ''}`, { kind: d.status === 'delivered' ? 'info' : 'error' });
              setShowLog(true);
              setVersion((v) => v + 1);
            }}
          >
            Send test
          </AsyncButton>
          <AsyncButton
            class="small"
            action={async () => {
              await patch('/api/settings/webhooks/:id', { params: { id: e().id }, body: { enabled: !e().enabled } });
              props.changed();
            }}
          >
            {e().enabled ? 'Disable' : 'Enable'}
          </AsyncButton>
          <button type="button" class="small" onClick={() => setEditing(!editing())} aria-expanded={editing()}>
            Edit
          </button>
          <button type="button" class="small" onClick={() => setShowLog(!showLog())} aria-expanded={showLog()}>
            Deliveries
          </button>
          {/* Undoable: the DELETE (endpoint and delivery log) waits for the toast to go. */}
          <button
            type="button"
            class="small danger"
            aria-label={`Delete webhook ${e().url}`}
            onClick={() => deleteWithUndo({ id: e().id, req: request('DELETE', '/api/settings/webhooks/:id', { params: { id: e().id } }), title: e().url, message: `Deleted the webhook ${e().url}`, done: props.changed })}
          >
            Delete
          </button>
        </div>
      </div>
      <Show when={editing()}>
        <div style={{ 'margin-top': '1rem' }}>
          <EndpointForm endpoint={e()} onSaved={() => (setEditing(false), props.changed())} onCancel={() => setEditing(false)} />
        </div>
      </Show>
      <Show when={showLog()}>
        <DeliveryLog endpoint={e()} version={version()} />
      </Show>
    </li>
  );
}

/** Task-event webhooks (integrations): up to 10 endpoints, each with its own secret and event filter. */
export default function Webhooks(): JSX.Element {
  const [data, { refetch }] = createResource(() => get('/api/settings/webhooks'));
  // A deleted endpoint leaves the list at once; it still counts against the limit until its DELETE is sent.
  const webhooks = () => (data()?.webhooks ?? []).filter((w) => !isDeleted(w.id));
  const full = () => (data()?.webhooks.length ?? 0) >= (data()?.limit ?? 10);
  return (
    <div class="stack">
      <section class="card" aria-labelledby="wh-h">
        <h2 id="wh-h">Task-event webhooks</h2>
        <p class="small muted">
          Each endpoint receives <span class="mono">task.created</span>, <span class="mono">task.updated</span>, <span class="mono">task.completed</span> and <span class="mono">task.deleted</span> as JSON POSTs,
          independent of notification channels. Deliveries that fail are retried; every attempt is logged below.
        </p>
        <Show when={data()}>
          <p class="small" data-testid="webhook-count">
            {webhooks().length} of {data()!.limit} endpoints used
          </p>
        </Show>
        <Show when={!full()} fallback={<div class="banner warn">You have reached the limit of {data()?.limit} endpoints. Delete one to add another.</div>}>
          <EndpointForm onSaved={() => void refetch()} />
        </Show>
      </section>
      <Show when={!data.error} fallback={<ErrorBanner error={data.error} />}>
        <Show when={data()} fallback={<Spinner />}>
          <Show when={webhooks().length > 0} fallback={<Empty>No webhooks yet. Add an endpoint above to receive task events.</Empty>}>
            <ul class="list stack" style={{ gap: '0.75rem' }} aria-label="Webhook endpoints">
              <For each={webhooks()}>{(w) => <EndpointCard endpoint={w} changed={() => void refetch()} />}</For>
            </ul>
          </Show>
        </Show>
      </Show>
    </div>
  );
}
