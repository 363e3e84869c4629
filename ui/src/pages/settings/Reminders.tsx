import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { get, put, type BodyOf } from '../../lib/api.ts';
import { toast, toastError } from '../../lib/toast.ts';
import { Spinner } from '../../components/ui.tsx';

interface Reminder {
  enabled: boolean;
  time: string;
}
interface ReminderSettings {
  enabled: boolean;
  time: string;
  streakReminderTime: string;
  weeklyReviewTime: string;
  streakReminderEnabled: boolean;
  weeklyReviewEnabled: boolean;
  dueToday: Reminder;
  overdue: Reminder;
  recurringDue: Reminder;
  morningBriefing: Reminder;
}

const KINDS = [
  { key: 'morningBriefing', label: 'Morning briefing', hint: 'One digest instead of the quest, streak and task reminders' },
  { key: 'dueToday', label: 'Tasks due today' },
  { key: 'overdue', label: 'Overdue tasks' },
  { key: 'recurringDue', label: 'Recurring tasks due' },
] as const;

/** The game's reminders: each its own switch and time, kept as flat keys of the settings. */
const GAME = [
  { enabled: 'enabled', time: 'time', label: 'Daily quest reminder', hint: "Tells you today's quest" },
  { enabled: 'streakReminderEnabled', time: 'streakReminderTime', label: 'Streak reminder', hint: 'Sent only on days your streak would end because nothing is done yet' },
  { enabled: 'weeklyReviewEnabled', time: 'weeklyReviewTime', label: 'Weekly review', hint: 'A look back at your week, every Sunday' },
] as const;

/** Any reminder switch is on. */
const anyOn = (s: ReminderSettings) => GAME.some((g) => s[g.enabled]) || KINDS.some((k) => s[k.key].enabled);

/** One reminder: its switch with a plain sentence under the name, and its local time. */
function ReminderRow(props: { label: string; hint?: string; enabled: boolean; time: string; busy: boolean; onEnabled: (on: boolean) => void; onTime: (time: string) => void }): JSX.Element {
  return (
    <li class="reminder">
      <label class="check grow">
        <input type="checkbox" checked={props.enabled} disabled={props.busy} onChange={(e) => props.onEnabled(e.currentTarget.checked)} />
        <span>
          {props.label}
          <Show when={props.hint}>
            <span class="small muted" style={{ display: 'block' }}>
              {props.hint}
            </span>
          </Show>
        </span>
      </label>
      <input type="time" value={props.time} aria-label={`${props.label} time`} onChange={(e) => props.onTime(e.currentTarget.value)} />
    </li>
  );
}

/**
 * When reminders fire (local times in the profile's timezone) and the quest's postpone limit.
 * `noChannel` is true once the channels are known and none is on: reminders switched on then reach
 * nobody, so the section says so and links to the channels below.
 */
export default function Reminders(props: { noChannel: boolean }): JSX.Element {
  // Either may be missing on a server without the game rules: the section then hides that part.
  const [settings, { mutate }] = createResource(() => get('/api/settings/notifications').catch(() => null));
  const [quest, { mutate: mutateQuest }] = createResource(() => get('/api/settings/quest').catch(() => null));
  const [busy, setBusy] = createSignal(false);
  async function save(patch: BodyOf<'PUT', '/api/settings/notifications'>) {
    setBusy(true);
    try {
      mutate(await put('/api/settings/notifications', { body: patch }));
      toast('Reminder settings saved');
    } catch (err) {
      toastError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section class="card stack" aria-labelledby="rem-h" data-testid="reminders">
      <h2 id="rem-h">Reminders</h2>
      <Show when={settings() !== undefined} fallback={<Spinner />}>
        <Show when={settings() === null}>
          <p class="small muted">Reminder settings are not available on this server.</p>
        </Show>
      </Show>
      <Show when={props.noChannel && settings() && anyOn(settings()!)}>
        <div class="banner warn" role="status" data-testid="no-channel-warning">
          Reminders are on, but no notification channel is set up, so they reach you nowhere. <a href="#channels">Set up a channel</a> below.
        </div>
      </Show>
      <Show when={settings()}>
        {(s) => (
          <ul class="list" aria-label="Reminder times">
            <For each={GAME}>
              {(g) => (
                <ReminderRow label={g.label} hint={g.hint} enabled={s()[g.enabled]} time={s()[g.time]} busy={busy()} onEnabled={(on) => void save({ [g.enabled]: on })} onTime={(time) => void save({ [g.time]: time })} />
              )}
            </For>
            <For each={KINDS}>
              {(k) => (
                <ReminderRow
                  label={k.label}
                  hint={'hint' in k ? k.hint : undefined}
                  enabled={s()[k.key].enabled}
                  time={s()[k.key].time}
                  busy={busy()}
                  onEnabled={(on) => void save({ [k.key]: { enabled: on } })}
                  onTime={(time) => void save({ [k.key]: { time } })}
                />
              )}
            </For>
          </ul>
        )}
      </Show>
      <Show when={quest()}>
        {(q) => (
          <label class="check">
            Quest postpones allowed per day
            <select
              style={{ width: 'auto' }}
              value={String(q().postponeLimit)}
              onChange={(e) =>
                void put('/api/settings/quest', { body: { postponeLimit: Number(e.currentTarget.value) } })
                  .then((r) => (mutateQuest(r), toast('Saved')))
                  .catch(toastError)
              }
            >
              <For each={[1, 2, 3, 4, 5]}>{(n) => <option value={String(n)}>{n}</option>}</For>
            </select>
          </label>
        )}
      </Show>
    </section>
  );
}
