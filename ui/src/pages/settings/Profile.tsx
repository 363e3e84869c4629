import { createSignal, For, Show, type JSX } from 'solid-js';
import { patch } from '../../lib/api.ts';
import { shared } from '../../lib/data.ts';
import { session } from '../../lib/session.ts';
import { setTheme, theme, type Theme } from '../../lib/theme.ts';
import { toast, toastError } from '../../lib/toast.ts';
import { Field, Spinner, TimezoneSelect } from '../../components/ui.tsx';

export default function Profile(): JSX.Element {
  // its figures (tasks created) change with every task: read afresh whenever the page opens
  void shared.refetchProfile();
  const [tz, setTz] = createSignal<string | null>(null);
  const browserTz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  async function saveTz(e: SubmitEvent) {
    e.preventDefault();
    try {
      await patch('/api/settings/timezone', { body: { timezone: tz() ?? shared.timezone() } });
      await shared.refetchProfile();
      toast('Timezone saved');
    } catch (err) {
      toastError(err);
    }
  }
  return (
    <div class="stack">
      <section class="card" aria-labelledby="acct-h">
        <h2 id="acct-h">Account</h2>
        <dl class="form-grid" style={{ margin: 0 }}>
          <div>
            <dt class="muted small">E-mail</dt>
            <dd style={{ margin: 0 }}>{session.me()?.email}</dd>
          </div>
          <div>
            <dt class="muted small">User id</dt>
            <dd style={{ margin: 0 }} class="mono">
              {session.me()?.id}
            </dd>
          </div>
          <Show when={shared.profile()}>
            {(p) => (
              <div>
                <dt class="muted small">Tasks created</dt>
                <dd style={{ margin: 0 }}>{p().totalTasksCreated}</dd>
              </div>
            )}
          </Show>
        </dl>
      </section>
      <section class="card" aria-labelledby="tz-h">
        <h2 id="tz-h">Timezone</h2>
        <p class="small muted">Due dates, the daily quest, streaks and reminder times follow this timezone.</p>
        <Show when={shared.profile() !== undefined} fallback={<Spinner />}>
          <form class="row" style={{ 'align-items': 'flex-end' }} onSubmit={(e) => void saveTz(e)}>
            <div style={{ flex: '1', 'min-width': '12rem' }}>
              <Field label="Timezone" hint={browserTz !== shared.timezone() ? `This browser is in ${browserTz}.` : undefined}>
                {(id, d) => <TimezoneSelect id={id} describedBy={d} value={tz() ?? shared.timezone()} onChange={setTz} />}
              </Field>
            </div>
            <button class="primary" type="submit">
              Save timezone
            </button>
          </form>
        </Show>
      </section>
      <section class="card" aria-labelledby="theme-h">
        <h2 id="theme-h">Appearance</h2>
        <div class="row" role="radiogroup" aria-labelledby="theme-h">
          <For each={['system', 'light', 'dark'] as Theme[]}>
            {(t) => (
              <label class="check">
                <input type="radio" name="theme" checked={theme() === t} onChange={() => setTheme(t)} />
                {t === 'system' ? 'Follow the system' : t === 'light' ? 'Light' : 'Dark'}
              </label>
            )}
          </For>
        </div>
      </section>
    </div>
  );
}
