import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { get, put } from '../../lib/api.ts';
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
  dueToday: Reminder;
  overdue: Reminder;
  recurringDue: Reminder;
  morningBriefing: Reminder;
}
interface QuestSettings {
  postponeLimit: number;
}

const KINDS = [
  { key: 'morningBriefing', label: 'Morning briefing', hint: 'One digest instead of the separate reminders below' },
  { key: 'dueToday', label: 'Tasks due today' },
  { key: 'overdue', label: 'Overdue tasks' },
  { key: 'recurringDue', label: 'Recurring tasks due' },
] as const;

/** Any reminder switch is on (streak and weekly review follow the daily quest reminder's channels). */
const anyOn = (s: ReminderSettings) => s.enabled || KINDS.some((k) => s[k.key].enabled);

/**
 * When reminders fire (local times in the profile's timezone) and the quest's postpone limit.
 * `noChannel` is true once the channels are known and none is on: reminders switched on then reach
 * nobody, so the section says so and links to the channels below.
 */
export default function Reminders(props: { noChannel: boolean }): JSX.Element {
  // Either may be missing on a server without the game rules: the section then hides that part.
  const [settings, { mutate }] = createResource(() => get<ReminderSettings>('/api/settings/notifications').catch(() => null));
  const [quest, { mutate: mutateQuest }] = createResource(() => get<QuestSettings>('/api/settings/quest').catch(() => null));
  const [busy, setBusy] = createSignal(false);
  async function save(patch: Partial<ReminderSettings>) {
    setBusy(true);
    try {
      mutate(await put<ReminderSettings>('/api/settings/notifications', patch));
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
            <li class="reminder">
              <label class="check grow">
                <input type="checkbox" checked={s().enabled} disabled={busy()} onChange={(e) => void save({ enabled: e.currentTarget.checked })} />
                Daily quest reminder
              </label>
              <input type="time" value={s().time} aria-label="Daily quest reminder time" onChange={(e) => void save({ time: e.currentTarget.value })} />
            </li>
            <li class="reminder">
              <span class="grow">Streak reminder (when nothing is done yet)</span>
              <input type="time" value={s().streakReminderTime} aria-label="Streak reminder time" onChange={(e) => void save({ streakReminderTime: e.currentTarget.value })} />
            </li>
            <li class="reminder">
              <span class="grow">Weekly review, Sundays</span>
              <input type="time" value={s().weeklyReviewTime} aria-label="Weekly review time" onChange={(e) => void save({ weeklyReviewTime: e.currentTarget.value })} />
            </li>
            <For each={KINDS}>
              {(k) => (
                <li class="reminder">
                  <label class="check grow">
                    <input type="checkbox" checked={s()[k.key].enabled} disabled={busy()} onChange={(e) => void save({ [k.key]: { enabled: e.currentTarget.checked } })} />
                    <span>
                      {k.label}
                      <Show when={'hint' in k}>
                        <span class="small muted" style={{ display: 'block' }}>
                          {(k as { hint?: string }).hint}
                        </span>
                      </Show>
                    </span>
                  </label>
                  <input type="time" value={s()[k.key].time} aria-label={`${k.label} time`} onChange={(e) => void save({ [k.key]: { time: e.currentTarget.value } })} />
                </li>
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
                void put<QuestSettings>('/api/settings/quest', { postponeLimit: Number(e.currentTarget.value) })
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
