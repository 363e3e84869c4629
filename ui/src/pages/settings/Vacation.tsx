import { createResource, createSignal, Show, type JSX } from 'solid-js';
import { get, put } from '../../lib/api.ts';
import { formatDate } from '../../lib/dates.ts';
import { refreshGame } from '../../lib/game.ts';
import { AsyncButton, Field, Spinner } from '../../components/ui.tsx';

/** Vacation mode: no reminders and no streak loss from today until it ends. */
export default function Vacation(): JSX.Element {
  const [mode, { mutate }] = createResource(() => get('/api/settings/vacation-mode'));
  const [until, setUntil] = createSignal('');
  const set = async (body: { active: boolean; endDate?: string | null }) => {
    mutate(await put('/api/settings/vacation-mode', { body }));
    refreshGame();
  };
  return (
    <section class="card stack" aria-labelledby="vacation-h" data-testid="vacation">
      <h2 id="vacation-h">Vacation mode</h2>
      <p class="small muted">While you are away no reminders are sent, and the days off never break your streak.</p>
      <Show when={mode.latest} fallback={<Spinner />}>
        {(m) => (
          <Show
            when={m().active}
            fallback={
              <div class="row" style={{ 'align-items': 'flex-end' }}>
                <Field label="Back on (optional)" hint="Leave empty to end it yourself.">
                  {(id, describedBy) => <input id={id} type="date" aria-describedby={describedBy} value={until()} onInput={(e) => setUntil(e.currentTarget.value)} />}
                </Field>
                <AsyncButton class="primary" action={() => set({ active: true, endDate: until() || null })}>
                  Start vacation
                </AsyncButton>
              </div>
            }
          >
            <p data-testid="vacation-status">
              On vacation since {formatDate(m().startDate)}
              {m().endDate ? `, until ${formatDate(m().endDate)}` : ''}.
            </p>
            <div class="row">
              <AsyncButton class="primary" action={() => set({ active: false })}>
                End vacation
              </AsyncButton>
            </div>
          </Show>
        )}
      </Show>
    </section>
  );
}
