import { createResource, createSignal, Show, type JSX } from 'solid-js';
import { get, post } from '../lib/api.ts';
import { formatDateTime } from '../lib/dates.ts';
import { DataTable } from '../components/DataTable.tsx';
import { ErrorBanner, Spinner } from '../components/ui.tsx';

/**
 * Events a consumer could not read (they fail its schema: a producer of a newer release, usually),
 * parked per service instead of dropped (GET /api/admin/dead-letters). Once the consumer is upgraded
 * "Replay" hands them to it again; it also does so by itself when it starts.
 */
export function ParkedEvents(): JSX.Element {
  const [parked, { refetch }] = createResource(() => get('/api/admin/dead-letters'));
  const [replaying, setReplaying] = createSignal(false);
  const [outcome, setOutcome] = createSignal<string | null>(null);
  const [failure, setFailure] = createSignal<unknown>(null);
  const rows = () => (parked.latest?.services ?? []).flatMap((s) => s.events.map((e) => ({ ...e, service: s.service })));
  const total = () => (parked.latest?.services ?? []).reduce((n, s) => n + s.total, 0);
  const replay = async () => {
    setReplaying(true);
    setFailure(null);
    try {
      const r = await post('/api/admin/dead-letters/replay');
      const replayed = r.results.reduce((n, s) => n + s.replayed, 0);
      const still = r.results.reduce((n, s) => n + s.stillParked.length, 0);
      setOutcome(`${replayed} replayed, ${still} still parked${r.missing.length ? `; no answer from ${r.missing.join(', ')}` : ''}.`);
      await refetch();
    } catch (err) {
      setFailure(err);
    } finally {
      setReplaying(false);
    }
  };
  return (
    <section class="card stack" aria-labelledby="parked-h" data-testid="admin-parked">
      <div class="row between">
        <h2 id="parked-h" style={{ margin: 0 }}>
          Parked events
        </h2>
        <div class="row">
          <button type="button" class="small" onClick={() => void refetch()}>
            Refresh
          </button>
          <button type="button" class="small" data-testid="parked-replay" disabled={replaying() || total() === 0} aria-busy={replaying()} onClick={() => void replay()}>
            {replaying() ? 'Replaying…' : 'Replay'}
          </button>
        </div>
      </div>
      <Show when={!parked.error} fallback={<ErrorBanner error={parked.error} />}>
        <Show when={parked.latest} fallback={<Spinner />}>
          {(p) => (
            <>
              <Show when={p().missing.length > 0}>
                <p class="small muted">No answer from {p().missing.join(', ')} (down, or of a release that does not park events).</p>
              </Show>
              <Show
                when={total() > 0}
                fallback={
                  <p class="muted" data-testid="parked-none">
                    None: every consumer could read every event.
                  </p>
                }
              >
                <p class="banner warn" role="status" data-testid="parked-total">
                  {total()} event{total() === 1 ? '' : 's'} could not be read by {total() === 1 ? 'its' : 'their'} consumer and wait here. Upgrade the consumer, then replay.
                </p>
                <DataTable
                  testId="parked-events"
                  caption="Parked events, oldest first"
                  rows={rows()}
                  columns={[
                    { header: 'Service', rowHeader: true, cell: (e) => e.service },
                    { header: 'Consumer', cell: (e) => e.durable },
                    { header: 'Subject', cell: (e) => e.subject },
                    { header: 'Event id', cell: (e) => e.msgId },
                    { header: 'Why', cell: (e) => e.error },
                    { header: 'Tries', cell: (e) => e.attempts },
                    { header: 'Parked', cell: (e) => formatDateTime(e.parkedAt) },
                  ]}
                />
              </Show>
            </>
          )}
        </Show>
      </Show>
      <Show when={outcome()}>
        <p role="status" data-testid="parked-outcome">
          {outcome()}
        </p>
      </Show>
      <Show when={failure()}>
        <ErrorBanner error={failure()} />
      </Show>
    </section>
  );
}
