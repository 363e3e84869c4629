import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, del, get, post, put } from '../../lib/api.ts';
import { formatDateTime } from '../../lib/dates.ts';
import { errorText, toast, toastError } from '../../lib/toast.ts';
import type { NotificationChannel, NotificationChannelType } from '../../lib/types.ts';
import { AsyncButton, dismissable, ErrorBanner, Field, Spinner } from '../../components/ui.tsx';
import { DataTable } from '../../components/DataTable.tsx';
import Reminders from './Reminders.tsx';
import { ask } from '../../lib/confirm.ts';

interface FieldSpec {
  key: string;
  label: string;
  hint?: string;
  required?: boolean;
  type?: 'text' | 'number' | 'url' | 'email';
}

/** Per-channel settings, as the notifier's contract names them (proto/src/notify.ts); which are secret comes from the API. */
const CHANNELS: Record<NotificationChannelType, { title: string; about: string; fields: FieldSpec[] }> = {
  push: { title: 'Browser push', about: 'Notifications on this device, even when the app is closed.', fields: [] },
  ntfy: {
    title: 'ntfy (topic-based push)',
    about: 'Publish to an ntfy topic; subscribe to it in the ntfy app.',
    fields: [
      { key: 'topic', label: 'Topic', required: true, hint: '1–64 letters, digits, - or _' },
      // the operator picks the default server (NTFY_DEFAULT_SERVER): no address is named here
      { key: 'server', label: 'Server', type: 'url', hint: "Your ntfy server's address; leave empty to use this instance's default" },
      { key: 'token', label: 'Access token' },
    ],
  },
  pushover: {
    title: 'Pushover (mobile push)',
    about: 'Deliver to the Pushover app on your phone.',
    fields: [
      { key: 'appToken', label: 'Application token', required: true },
      { key: 'userKey', label: 'User key', required: true },
      { key: 'device', label: 'Device (optional)' },
    ],
  },
  telegram: {
    title: 'Telegram (messaging)',
    about: 'A bot sends you a message.',
    fields: [
      { key: 'botToken', label: 'Bot token', required: true },
      { key: 'chatId', label: 'Chat id', required: true, hint: 'Numeric id or @channelname' },
    ],
  },
  email: { title: 'E-mail', about: 'Sent through this instance’s mail server.', fields: [{ key: 'address', label: 'Address', type: 'email', hint: 'Default: your sign-in address' }] },
  'http-alert': {
    title: 'HTTP Alert (webhook)',
    about: 'POSTs {event: "service.notification", title, body, url, tag, timestamp} to your URL.',
    fields: [
      { key: 'url', label: 'URL', type: 'url', required: true },
      { key: 'secret', label: 'Signing secret', hint: 'Adds X-Service-Signature: sha256=<hex>' },
    ],
  },
};

function base64UrlToBytes(s: string): Uint8Array<ArrayBuffer> {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(b.length));
  for (let i = 0; i < b.length; i++) out[i] = b.charCodeAt(i);
  return out;
}

/** Subscribe this browser with the service worker and register the subscription with the notifier. */
async function subscribePush(): Promise<void> {
  if (!('serviceWorker' in navigator) || !('PushManager' in window)) throw new Error('This browser does not support push notifications.');
  const { publicKey } = await get('/api/push/vapid-public-key');
  if (!publicKey) throw new Error('Browser push is not configured on this server.');
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error('Notifications are blocked for this site in the browser settings.');
  const reg = await navigator.serviceWorker.register('/sw.js');
  await navigator.serviceWorker.ready;
  const sub = (await reg.pushManager.getSubscription()) ?? (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlToBytes(publicKey) }));
  const json = sub.toJSON();
  await post('/api/push/subscribe', { body: { endpoint: sub.endpoint, expirationTime: json.expirationTime ?? null, keys: { p256dh: json.keys?.p256dh ?? '', auth: json.keys?.auth ?? '' } } });
  await put('/api/settings/notification-channels/:type', { params: { type: 'push' }, body: { enabled: true, config: {} } });
}

async function unsubscribePush(): Promise<void> {
  const reg = await navigator.serviceWorker?.getRegistration('/sw.js');
  const sub = await reg?.pushManager.getSubscription();
  if (sub) {
    await post('/api/push/unsubscribe', { body: { endpoint: sub.endpoint } });
    await sub.unsubscribe();
  }
}

function ChannelCard(props: { channel: NotificationChannel; changed: () => void }): JSX.Element {
  const spec = () => CHANNELS[props.channel.type];
  const [values, setValues] = createSignal<Record<string, string>>({});
  const [error, setError] = createSignal<ApiError | null>(null);
  const [open, setOpen] = createSignal(false);
  const secret = (f: FieldSpec) => props.channel.secretFields.includes(f.key);
  const current = (k: string) => values()[k] ?? (props.channel.config?.[k] != null ? String(props.channel.config[k]) : '');

  /** The saved configuration as it may be sent back: its plain fields; secrets are left out, so they are kept. */
  const savedConfig = () => {
    const config: Record<string, unknown> = {};
    for (const f of spec().fields) if (!secret(f) && props.channel.config?.[f.key] != null) config[f.key] = props.channel.config[f.key];
    return config;
  };

  /** Field problems by the field's label (the API's message names request paths such as body.config.url, meant for API clients). */
  const errorSummary = (err: ApiError) =>
    err.issues.length ? err.issues.map((i) => `${spec().fields.find((f) => f.key === i.path.split('.').pop())?.label ?? i.path.split('.').pop()}: ${i.message}`).join('; ') : err.message;

  async function save(e: SubmitEvent) {
    e.preventDefault();
    setError(null);
    const config = savedConfig();
    for (const f of spec().fields) {
      const v = values()[f.key];
      if (v !== undefined) config[f.key] = v === '' ? null : f.type === 'number' ? Number(v) : v;
    }
    try {
      const saved = await put('/api/settings/notification-channels/:type', { params: { type: props.channel.type }, body: { enabled: true, config } });
      setValues({});
      setOpen(false);
      toast(saved.confirmation === 'waiting' ? `${spec().title} saved: open the link mailed to ${String(saved.config?.address)} to confirm it` : `${spec().title} saved`);
      props.changed();
    } catch (err) {
      if (err instanceof ApiError) setError(err);
      else toastError(err);
    }
  }

  return (
    <li class="card" data-testid={`channel-${props.channel.type}`}>
      <div class="row between">
        <div>
          <h3 style={{ margin: 0 }}>{spec().title}</h3>
          <p class="small muted" style={{ margin: 0 }}>
            {spec().about}
          </p>
        </div>
        <div class="row">
          <span class={`badge ${props.channel.enabled ? 'ok' : ''}`}>{props.channel.configured ? (props.channel.enabled ? 'on' : 'off') : 'not set up'}</span>
          {/* an e-mail address gets nothing until its owner opens the link mailed to it */}
          <Show when={props.channel.confirmation === 'waiting'}>
            <span class="badge" data-testid="channel-waiting" title={`Open the link mailed to ${String(props.channel.config?.address ?? 'the address')}; save again for a new one`}>
              waiting for confirmation
            </span>
          </Show>
          <Show when={props.channel.type === 'push'}>
            <AsyncButton
              class="small"
              action={async () => {
                try {
                  await subscribePush();
                  toast('This browser will receive push notifications');
                  props.changed();
                } catch (err) {
                  toast(errorText(err), { kind: 'error' });
                }
              }}
            >
              Subscribe this browser
            </AsyncButton>
            <Show when={props.channel.configured}>
              <AsyncButton class="small" action={async () => (await unsubscribePush(), toast('This browser is unsubscribed'), props.changed())}>
                Unsubscribe
              </AsyncButton>
            </Show>
          </Show>
          <Show when={spec().fields.length > 0}>
            <button type="button" class="small" onClick={() => setOpen(!open())} aria-expanded={open()}>
              {props.channel.configured ? 'Edit' : 'Set up'}
            </button>
          </Show>
          <Show when={props.channel.configured}>
            <AsyncButton
              class="small"
              action={async () => {
                const r = await post('/api/settings/notification-channels/:type/test', { params: { type: props.channel.type } });
                toast(r.ok ? `Test sent (${r.delivered} delivered)` : `Test failed: ${r.error ?? 'unknown error'}`, { kind: r.ok ? 'info' : 'error' });
                props.changed();
              }}
            >
              Send test
            </AsyncButton>
            <AsyncButton
              class="small"
              action={async () => {
                await put('/api/settings/notification-channels/:type', { params: { type: props.channel.type }, body: { enabled: !props.channel.enabled, config: savedConfig() } });
                props.changed();
              }}
            >
              {props.channel.enabled ? 'Turn off' : 'Turn on'}
            </AsyncButton>
            <AsyncButton
              class="small danger"
              action={async () => {
                if (!(await ask({ title: `Remove the ${spec().title} channel?`, body: 'Its settings are deleted; nothing more is sent there.', confirm: 'Remove', danger: true }))) return;
                await del('/api/settings/notification-channels/:type', { params: { type: props.channel.type } });
                props.changed();
              }}
            >
              Remove
            </AsyncButton>
          </Show>
        </div>
      </div>
      <Show when={open()}>
        <form class="stack" ref={(el) => dismissable(el, () => setOpen(false))} style={{ 'margin-top': '1rem' }} onSubmit={(e) => void save(e)} aria-label={`${spec().title} settings`}>
          <div class="form-grid">
            <For each={spec().fields}>
              {(f) => (
                <Field label={f.label} hint={secret(f) && props.channel.configured ? 'Leave empty to keep the saved value' : f.hint} error={error()?.fieldError(`config.${f.key}`) ?? error()?.fieldError(f.key)}>
                  {(id, d) => (
                    <input
                      id={id}
                      aria-describedby={d}
                      type={secret(f) ? 'password' : (f.type ?? 'text')}
                      autocomplete={secret(f) ? 'new-password' : 'off'}
                      required={f.required && !(secret(f) && props.channel.configured)}
                      value={secret(f) ? (values()[f.key] ?? '') : current(f.key)}
                      onInput={(e) => setValues({ ...values(), [f.key]: e.currentTarget.value })}
                    />
                  )}
                </Field>
              )}
            </For>
          </div>
          <Show when={error()}>
            <div class="banner error" role="alert" data-testid="channel-error">
              {errorSummary(error()!)}
            </div>
          </Show>
          <div class="row">
            <button class="primary" type="submit">
              Save
            </button>
            <button type="button" onClick={() => setOpen(false)}>
              Cancel
            </button>
          </div>
        </form>
      </Show>
    </li>
  );
}

export default function Notifications(): JSX.Element {
  const [channels, { refetch }] = createResource(async () => (await get('/api/settings/notification-channels')).channels);
  const [history, { refetch: refetchHistory }] = createResource(async () => (await get('/api/settings/notification-history')).entries);
  const changed = () => {
    void refetch();
    void refetchHistory();
  };
  return (
    <div class="stack">
      <Reminders noChannel={channels() !== undefined && !channels()!.some((c) => c.available && c.configured && c.enabled)} />
      <Show when={!channels.error} fallback={<ErrorBanner error={channels.error} />}>
        <Show when={channels()} fallback={<Spinner />}>
          {/* Channels the operator has not enabled (e-mail without SMTP, push without VAPID) are hidden. */}
          <ul id="channels" class="list stack" style={{ gap: '0.75rem' }} aria-label="Notification channels">
            <For each={channels()!.filter((c) => c.available)}>{(c) => <ChannelCard channel={c} changed={changed} />}</For>
          </ul>
        </Show>
      </Show>
      <section class="card" aria-labelledby="hist-h">
        <div class="row between">
          <h2 id="hist-h">Delivery log</h2>
          <button type="button" class="small ghost" onClick={() => void refetchHistory()}>
            Refresh
          </button>
        </div>
        <Show when={history()} fallback={<Spinner />}>
          <Show when={history()!.length > 0} fallback={<p class="muted small">No notifications sent yet. Set up a channel above and use Send test to try it.</p>}>
            <DataTable
              testId="notification-history"
              caption="Notifications sent"
              rows={history()!}
              columns={[
                { header: 'When', cell: (h) => formatDateTime(h.createdAt) },
                { header: 'Channel', cell: (h) => CHANNELS[h.channel]?.title ?? h.channel },
                { header: 'Notification', cell: (h) => `${h.title}${h.test ? ' (test)' : ''}` },
                {
                  header: 'Status',
                  cell: (h) => (
                    <div>
                      <span class={`badge ${h.status === 'sent' ? 'ok' : h.status === 'failed' ? 'high' : ''}`}>{h.status}</span>
                      <Show when={h.error}>
                        <div class="small" style={{ color: 'var(--danger)' }}>
                          {h.error}
                        </div>
                      </Show>
                    </div>
                  ),
                },
              ]}
            />
          </Show>
        </Show>
      </section>
    </div>
  );
}
