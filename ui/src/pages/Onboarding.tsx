import { A, useNavigate } from '@solidjs/router';
import { createSignal, Show, type JSX } from 'solid-js';
import { patch, post } from '../lib/api.ts';
import { shared } from '../lib/data.ts';
import { toastError } from '../lib/toast.ts';
import { Field } from '../components/ui.tsx';

/** First steps: confirm the timezone (dates depend on it), add a first task, then pointers to the rest. */
export default function Onboarding(): JSX.Element {
  const navigate = useNavigate();
  const detected = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const [step, setStep] = createSignal(1);
  const [title, setTitle] = createSignal('');
  async function saveTimezone() {
    try {
      await patch('/api/settings/timezone', { timezone: detected });
      await shared.refetchProfile();
      setStep(2);
    } catch (err) {
      toastError(err);
    }
  }
  async function addTask(e: SubmitEvent) {
    e.preventDefault();
    try {
      if (title().trim()) {
        await post('/api/tasks', { title: title().trim(), type: 'DAILY_ELIGIBLE' });
        // the profile counts tasks created: Today's "New here?" banner goes as soon as there is one
        void shared.refetchProfile();
      }
      setStep(3);
    } catch (err) {
      toastError(err);
    }
  }
  return (
    <div class="stack" style={{ 'max-width': '40rem' }}>
      <h1>Welcome</h1>
      <p class="muted">Step {step()} of 3</p>
      <Show when={step() === 1}>
        <section class="card stack">
          <h2>Your timezone</h2>
          <p>
            Due dates, the daily quest and your streak follow your local day. This browser says <strong>{detected}</strong>.
          </p>
          <div class="row">
            <button class="primary" type="button" onClick={() => void saveTimezone()}>
              Use {detected}
            </button>
            <A href="/settings" class="button">
              Choose another
            </A>
          </div>
        </section>
      </Show>
      <Show when={step() === 2}>
        <section class="card">
          <h2>Your first task</h2>
          <form class="stack" onSubmit={(e) => void addTask(e)}>
            <Field label="What do you want to get done?" hint="It can become your daily quest.">
              {(id, d) => <input id={id} aria-describedby={d} value={title()} onInput={(e) => setTitle(e.currentTarget.value)} maxlength="255" />}
            </Field>
            <div class="row">
              <button class="primary" type="submit">
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
        <section class="card stack">
          <h2>You're set</h2>
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
