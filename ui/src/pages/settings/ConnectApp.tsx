import { createSignal, Show, type JSX } from 'solid-js';
import { ApiError, post } from '../../lib/api.ts';
import { session } from '../../lib/session.ts';
import { toast, toastError } from '../../lib/toast.ts';
import { Field } from '../../components/ui.tsx';

/**
 * Settings → Connect an app: what a CalDAV client (Thunderbird, DAVx5 with tasks.org or jtx Board,
 * Apple Reminders, todoman) needs to sync the tasks both ways — the server URL, the user name and an
 * app password. The password is an API key made here for the app and shown once; a read-only one
 * gives the app read-only calendars. docs/caldav.md has the steps for each client.
 */
export default function ConnectApp(): JSX.Element {
  const [app, setApp] = createSignal('');
  const [readOnly, setReadOnly] = createSignal(false);
  const [password, setPassword] = createSignal<string | null>(null);
  const [error, setError] = createSignal<ApiError | null>(null);
  const server = `${window.location.origin}/dav/`;
  const user = () => session.me()?.email ?? '';
  const copy = (text: string, what: string) => void navigator.clipboard.writeText(text).then(() => toast(`${what} copied`));

  async function create(e: SubmitEvent) {
    e.preventDefault();
    setError(null);
    try {
      const r = await post('/api/user/api-keys', { body: { name: `App: ${app().trim()}`.slice(0, 100), readOnly: readOnly(), expiresAt: null } });
      setPassword(r.key);
      setApp('');
    } catch (err) {
      if (err instanceof ApiError) setError(err);
      else toastError(err);
    }
  }

  return (
    <div class="stack">
      <section class="card stack" aria-labelledby="connect-h">
        <h2 id="connect-h">Connect an app</h2>
        <p class="small muted">
          Your tasks sync both ways with apps that speak CalDAV: Thunderbird, DAVx5 with tasks.org or jtx Board, Apple Reminders, todoman. Each topic is a task list there; tasks
          without a topic are in “Tasks”. Completing a task in an app earns its coins as in this app.
        </p>
        <div class="form-grid">
          <Field label="Server URL">
            {(id) => (
              <div class="row">
                <input id={id} class="mono" readonly value={server} data-testid="caldav-server" onFocus={(e) => e.currentTarget.select()} />
                <button type="button" class="small" onClick={() => copy(server, 'Server URL')}>
                  Copy
                </button>
              </div>
            )}
          </Field>
          <Field label="User name">
            {(id) => (
              <div class="row">
                <input id={id} class="mono" readonly value={user()} data-testid="caldav-user" onFocus={(e) => e.currentTarget.select()} />
                <button type="button" class="small" onClick={() => copy(user(), 'User name')}>
                  Copy
                </button>
              </div>
            )}
          </Field>
        </div>
        <p class="small muted">Apps that look the server up themselves (Apple Reminders, DAVx5) need only {window.location.host} as the server.</p>
      </section>
      <section class="card stack" aria-labelledby="password-h">
        <h2 id="password-h">App password</h2>
        <p class="small muted">Make one password per app, so you can revoke one app without the others (Settings → API keys). It is shown only once.</p>
        <form class="stack" onSubmit={(e) => void create(e)}>
          <Field label="App" error={error()?.fieldError('name')}>
            {(id, d) => <input id={id} aria-describedby={d} value={app()} onInput={(e) => setApp(e.currentTarget.value)} maxlength="90" placeholder="e.g. Thunderbird on my laptop" required />}
          </Field>
          <label class="check">
            <input type="checkbox" checked={readOnly()} onChange={(e) => setReadOnly(e.currentTarget.checked)} /> Read-only (the app can show tasks but not change them)
          </label>
          <div>
            <button class="primary" type="submit">
              Make an app password
            </button>
          </div>
        </form>
        <Show when={password()}>
          <div class="banner ok stack" style={{ gap: '0.5rem' }}>
            <label for="app-password">App password (shown only now)</label>
            <input id="app-password" class="mono" readonly value={password()!} data-testid="caldav-password" onFocus={(e) => e.currentTarget.select()} />
            <div>
              <button type="button" class="small" onClick={() => copy(password()!, 'Password')}>
                Copy
              </button>
            </div>
          </div>
        </Show>
      </section>
    </div>
  );
}
