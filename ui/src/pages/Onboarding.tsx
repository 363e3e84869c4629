import { A, useNavigate } from '@solidjs/router';
import { createEffect, createMemo, createSignal, on, Show, type JSX } from 'solid-js';
import { patch, post } from '../lib/api.ts';
import { shared } from '../lib/data.ts';
import { createBody, parseLine } from '../lib/quickadd.ts';
import { toastError } from '../lib/toast.ts';
import { PhraseChips, PhraseField } from '../components/PhraseInput.tsx';
import { TimezoneSelect } from '../components/ui.tsx';

/**
 * First steps: confirm the timezone (dates depend on it), add a first task, then pointers to the
 * rest. Everything happens inside the wizard (another timezone is chosen here, not in Settings), and
 * each step takes the focus where the person goes on: the first-task field, then the last step's
 * heading. The first task is typed as in quick add: same phrases, same chips.
 */
export default function Onboarding(): JSX.Element {
  const navigate = useNavigate();
  const detected = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const [step, setStep] = createSignal(1);
  const [choosing, setChoosing] = createSignal(false);
  const [zone, setZone] = createSignal(detected);
  const [title, setTitle] = createSignal('');
  const [busy, setBusy] = createSignal(false);
  const [error, setError] = createSignal<string | undefined>();
  const parsed = createMemo(() => parseLine(title(), shared.today(), shared.topics() ?? []));
  let taskField: HTMLInputElement | undefined;
  let doneHeading: HTMLHeadingElement | undefined;
  let zoneSelect: HTMLSelectElement | undefined;
  // A new step takes the focus (a step's controls are gone once it is done; focus would drop to the page).
  createEffect(on(step, (s) => queueMicrotask(() => (s === 2 ? taskField : s === 3 ? doneHeading : undefined)?.focus()), { defer: true }));
  createEffect(on(choosing, (c) => c && queueMicrotask(() => zoneSelect?.focus()), { defer: true }));

  async function saveTimezone(timezone: string) {
    try {
      await patch('/api/settings/timezone', { body: { timezone } });
      await shared.refetchProfile();
      setStep(2);
    } catch (err) {
      toastError(err);
    }
  }
  async function addTask(e: SubmitEvent) {
    e.preventDefault();
    if (busy()) return;
    const body = createBody(parsed());
    // Only a date, a repeat or a priority: nothing is lost silently, the person adds what it is.
    if (title().trim() && !body.title) {
      setError('Add a few words saying what the task is, e.g. "Water the plants".');
      taskField?.focus();
      return;
    }
    setBusy(true);
    try {
      if (body.title) {
        // A one-off first task may become the daily quest; a repeating one stays recurring.
        await post('/api/tasks', { body: { type: 'DAILY_ELIGIBLE', ...body } });
        // the profile counts tasks created: Today's "New here?" banner goes as soon as there is one
        void shared.refetchProfile();
      }
      setStep(3);
    } catch (err) {
      toastError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <div class="stack" style={{ 'max-width': '40rem' }} data-testid="onboarding">
      <h1>Welcome</h1>
      <p class="muted">Step {step()} of 3</p>
      <Show when={step() === 1}>
        <section class="card stack" aria-labelledby="ob-tz-h">
          <h2 id="ob-tz-h">Your timezone</h2>
          <p>
            Due dates, the daily quest and your streak follow your local day. This browser says <strong>{detected}</strong>.
          </p>
          <Show
            when={choosing()}
            fallback={
              <div class="row">
                <button class="primary" type="button" onClick={() => void saveTimezone(detected)}>
                  Use {detected}
                </button>
                <button type="button" onClick={() => setChoosing(true)}>
                  Choose another
                </button>
              </div>
            }
          >
            <form
              class="stack"
              onSubmit={(e) => {
                e.preventDefault();
                void saveTimezone(zone());
              }}
            >
              <div class="field">
                <label for="ob-zone">Timezone</label>
                <TimezoneSelect id="ob-zone" ref={(el) => (zoneSelect = el)} value={zone()} onChange={setZone} />
              </div>
              <div class="row">
                <button class="primary" type="submit">
                  Use {zone()}
                </button>
                <button type="button" onClick={() => (setZone(detected), setChoosing(false))}>
                  Back
                </button>
              </div>
            </form>
          </Show>
        </section>
      </Show>
      <Show when={step() === 2}>
        <section class="card" aria-labelledby="ob-task-h">
          <h2 id="ob-task-h">Your first task</h2>
          <form class="stack" onSubmit={(e) => void addTask(e)}>
            <div class="field">
              <label for="ob-task">What do you want to get done?</label>
              <PhraseField id="ob-task" ref={(el) => (taskField = el)} value={title()} onInput={(v) => (setTitle(v), setError(undefined))} parsed={parsed()} describedBy={`ob-task-hint ob-task-parts${error() ? ' ob-task-err' : ''}`} placeholder="e.g. Water the plants every sat" testId="ob-task" invalid={Boolean(error())} />
              <span class="hint" id="ob-task-hint">
                Written as in quick add: a date, a repeat, #topic or !high are understood. It can become your daily quest.
              </span>
              <Show when={error()}>
                <span class="error" id="ob-task-err" role="alert">
                  {error()}
                </span>
              </Show>
              <PhraseChips id="ob-task-parts" parsed={parsed()} testId="ob-task" examples={<>Try <kbd>tomorrow</kbd> <kbd>every mon wed fri</kbd> <kbd>!high</kbd></>} />
            </div>
            <div class="row">
              <button class="primary" type="submit" aria-disabled={busy() || undefined}>
                Add and continue
              </button>
              <button type="button" onClick={() => setStep(3)}>
                Skip
              </button>
            </div>
          </form>
        </section>
      </Show>
      <Show when={step() === 3}>
        <section class="card stack" aria-labelledby="ob-done-h">
          <h2 id="ob-done-h" tabindex="-1" ref={(el) => (doneHeading = el)}>
            You're set
          </h2>
          <ul>
            <li>Each day a <strong>daily quest</strong> is picked from your tasks. Complete it to grow your streak.</li>
            <li>
              Get reminders in <A href="/settings/notifications">notification settings</A>.
            </li>
            <li>
              Protect your account with a <A href="/settings/security">second factor</A>.
            </li>
          </ul>
          <div>
            <button class="primary" type="button" onClick={() => navigate('/dashboard')}>
              Go to today
            </button>
          </div>
        </section>
      </Show>
    </div>
  );
}
