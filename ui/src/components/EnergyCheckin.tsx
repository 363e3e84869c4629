import { createResource, For, Show, type JSX } from 'solid-js';
import { lastGood, refetchOnReconnect } from '../lib/connection.ts';
import { post } from '../lib/api.ts';
import { read } from '../lib/cache.ts';
import { refreshGame } from '../lib/game.ts';

const LEVELS = [
  { level: 'LOW', label: 'Low' },
  { level: 'MEDIUM', label: 'Medium' },
  { level: 'HIGH', label: 'High' },
] as const;

/** One tap a day: today's energy, which the daily quest matches (and a 7-day check-in streak). */
export function EnergyCheckin(): JSX.Element {
  const [stateRes, { mutate, refetch }] = createResource(() => read('/api/energy-checkin'));
  // Offline: the last check-in stays shown, and it loads again when back.
  const state = lastGood(stateRes);
  refetchOnReconnect(refetch);
  async function check(level: (typeof LEVELS)[number]['level']) {
    mutate(await post('/api/energy-checkin', { body: { level } }));
    refreshGame();
  }
  return (
    <section class="card" aria-labelledby="energy-h" data-testid="energy-checkin">
      <h2 id="energy-h">Energy today</h2>
      <div class="row" role="group" aria-label="How much energy do you have today?">
        <For each={LEVELS}>
          {(l) => (
            <button type="button" class="small" aria-pressed={state()?.today?.level === l.level} onClick={() => void check(l.level)}>
              {l.label}
            </button>
          )}
        </For>
      </div>
      <p class="small muted" style={{ margin: '0.5rem 0 0' }}>
        <Show when={state()} fallback="The daily quest prefers tasks that match your energy.">
          {(s) => <>{s().today ? `Checked in: ${s().today!.level.toLowerCase()}. ${s().streak}-day check-in streak.` : 'Not checked in yet today. The daily quest prefers tasks that match your energy.'}</>}
        </Show>
      </p>
    </section>
  );
}
