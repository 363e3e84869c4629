import { createResource, createSignal, Show, type JSX } from 'solid-js';
import { del, get, post } from '../../lib/api.ts';
import { formatDateTime } from '../../lib/dates.ts';
import { toast } from '../../lib/toast.ts';
import { AsyncButton, Spinner } from '../../components/ui.tsx';
import { ask } from '../../lib/confirm.ts';

/** The secret iCal feed URL: shown once when created or rotated (only its hash is stored). */
export default function Calendar(): JSX.Element {
  const [status, { refetch }] = createResource(() => get('/api/settings/calendar-feed'));
  const [url, setUrl] = createSignal<string | null>(null);
  async function rotate() {
    if (status()?.active && !(await ask({ title: 'Create a new feed URL?', body: 'Calendars subscribed to the old URL stop updating.', confirm: 'Rotate' }))) return;
    const r = await post('/api/settings/calendar-feed');
    setUrl(r.url);
    void refetch();
  }
  async function copy() {
    await navigator.clipboard.writeText(url()!);
    toast('Feed URL copied');
  }
  return (
    <section class="card stack" aria-labelledby="cal-h">
      <h2 id="cal-h">Calendar feed (iCal)</h2>
      <p class="small muted">Subscribe to your tasks from any calendar app. Anyone with the URL can read your task titles and dates, so keep it private; rotate it if it leaks.</p>
      <Show when={status()} fallback={<Spinner />}>
        <p data-testid="feed-status">{status()!.active ? `A feed URL exists (created ${formatDateTime(status()!.createdAt)}).` : 'No feed URL yet. Create one, then subscribe to it in your calendar app to see your due tasks there.'}</p>
      </Show>
      <Show when={url()}>
        <div class="banner ok stack" style={{ gap: '0.5rem' }}>
          <label for="feed-url">Your feed URL (shown only now)</label>
          <input id="feed-url" class="mono" readonly value={url()!} onFocus={(e) => e.currentTarget.select()} data-testid="feed-url" />
          <div class="row">
            <AsyncButton class="small" action={copy}>
              Copy
            </AsyncButton>
          </div>
        </div>
      </Show>
      <div class="row">
        <AsyncButton class="primary" action={rotate}>
          {status()?.active ? 'Rotate feed URL' : 'Create feed URL'}
        </AsyncButton>
        <Show when={status()?.active}>
          <AsyncButton
            class="danger"
            action={async () => {
              if (!(await ask({ title: 'Turn the calendar feed off?', body: 'Calendars subscribed to it stop updating.', confirm: 'Turn off', danger: true }))) return;
              await del('/api/settings/calendar-feed');
              setUrl(null);
              void refetch();
            }}
          >
            Turn off
          </AsyncButton>
        </Show>
      </div>
    </section>
  );
}
