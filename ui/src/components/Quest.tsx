import { A } from '@solidjs/router';
import { createResource, Show, type JSX } from 'solid-js';
import { Icon } from './icons.tsx';
import { ApiError, del, post } from '../lib/api.ts';
import { read } from '../lib/cache.ts';
import { lastGood, refetchOnReconnect } from '../lib/connection.ts';
import { coinsGained, gameStats, refreshGame } from '../lib/game.ts';
import { toast, toastError } from '../lib/toast.ts';
import { AsyncButton, Spinner } from './ui.tsx';

const TIER: Record<string, string> = {
  overdue: 'Overdue the longest',
  'high-priority': 'High priority in a topic',
  'recurring-due': 'Recurring and due',
  random: 'Picked for you',
  restored: 'Back after a postponement',
};

/** Today's daily quest: complete it, postpone it to tomorrow (with undo), or roll a different one. */
export function QuestCard(props: { onChange: () => void }): JSX.Element {
  const [questRes, { refetch, mutate }] = createResource(() => read('/api/daily-quest'));
  // Offline: the last quest stays shown (a failed refetch never throws into Today), and it loads again when back.
  const quest = lastGood(questRes);
  refetchOnReconnect(refetch);
  const after = (msg: string, action?: { label: string; run: () => void }) => {
    refreshGame();
    props.onChange();
    toast(msg, { action });
  };
  let done: HTMLDivElement | undefined;
  async function complete(id: string) {
    const before = gameStats()?.coins;
    const r = await post('/api/tasks/:id/complete', { params: { id } });
    await refetch();
    // The Complete button is gone: focus goes to the card's message, so its Undo is one Tab away.
    done?.focus();
    after(`Quest complete! +${coinsGained(r, before)} coins`, { label: 'Undo', run: () => void undoComplete(id) });
  }
  async function undoComplete(id: string) {
    try {
      const r = await del('/api/tasks/:id/complete', { params: { id } });
      await refetch();
      after(`Quest reopened · −${r.coinsRemoved} coins`);
      document.querySelector<HTMLElement>('[data-testid="daily-quest"] [data-quest-complete]')?.focus();
    } catch (err) {
      toastError(err);
    }
  }
  async function postpone() {
    try {
      mutate(await post('/api/daily-quest/postpone'));
      after('Postponed to tomorrow', {
        label: 'Undo',
        run: () =>
          void post('/api/daily-quest/restore')
            .then((r) => (mutate(r), after('Quest restored')))
            .catch(toastError),
      });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'LIMIT_REACHED') toast(`Daily postpone limit reached (${quest()?.postponeLimit ?? ''}).`, { kind: 'error' });
      else throw err;
    }
  }
  return (
    <section class="card quest" aria-labelledby="quest-h" data-testid="daily-quest">
      <h2 id="quest-h">
        <Icon name="star" /> Daily quest
      </h2>
      <Show when={quest() || !questRes.loading} fallback={<Spinner />}>
        <Show when={quest() || !questRes.error} fallback={<p class="muted">{(questRes.error as Error)?.message}</p>}>
          <Show when={quest()?.quest} fallback={<p class="muted">No quest today: add a task and the quest picks one of your open tasks.</p>}>
            {(t) => (
              <>
                <p class="quest-title" data-testid="quest-title">
                  {t()?.title}
                </p>
                <Show when={quest()?.tier}>
                  <p class="small muted" style={{ 'margin-top': '-0.5rem' }}>
                    {TIER[quest()?.tier ?? ''] ?? quest()?.tier}
                  </p>
                </Show>
                <Show
                  when={!quest()?.completed}
                  fallback={
                    <div class="banner ok row between" data-testid="quest-done" tabindex="-1" ref={done}>
                      <span role="status">Quest complete! See you tomorrow.</span>
                      <button type="button" class="small" aria-label={`Undo completing the quest "${t()?.title}"`} onClick={() => void undoComplete(t().id)}>
                        Undo
                      </button>
                    </div>
                  }
                >
                  <div class="row">
                    <AsyncButton class="primary" data-quest-complete action={() => complete(t().id)}>
                      Complete
                    </AsyncButton>
                    <AsyncButton action={postpone} disabled={(quest()?.postponesToday ?? 0) >= (quest()?.postponeLimit ?? 0)}>
                      Postpone
                    </AsyncButton>
                    <AsyncButton action={async () => (mutate(await post('/api/daily-quest')), after('New quest rolled'))}>Re-roll</AsyncButton>
                  </div>
                  <p class="small muted" style={{ 'margin-top': '0.5rem' }}>
                    Postponed today: {quest()?.postponesToday} of {quest()?.postponeLimit}
                  </p>
                </Show>
              </>
            )}
          </Show>
        </Show>
      </Show>
    </section>
  );
}

/** Streak with its monthly shield, quest streak, coins and progress to the next level. */
export function StreakCard(): JSX.Element {
  return (
    <section class="card" aria-labelledby="streak-h" data-testid="streak-card">
      <h2 id="streak-h">Streak &amp; coins</h2>
      <Show when={gameStats()} fallback={<p class="muted">Complete a task to start your streak.</p>}>
        {(g) => (
          <div class="stack" style={{ gap: '0.75rem' }}>
            <div class="kpis">
              <div class="kpi">
                <div class="value" data-testid="streak-current">
                  {g().streak.current}
                </div>
                <div class="label">day streak (best {g().streak.max})</div>
              </div>
              <div class="kpi">
                <div class="value">{g().coins}</div>
                <div class="label">
                  coins · <A href="/wishlist">wishlist</A>
                </div>
              </div>
              <div class="kpi">
                <div class="value">{g().level}</div>
                <div class="label">level</div>
              </div>
            </div>
            <p class="small" style={{ margin: 0 }} data-testid="shield">
              {g().streak.shieldAvailable ? 'Streak shield ready: one missed day this month keeps your streak.' : 'Streak shield used this month.'} Quest streak: {g().questStreak.current}.
            </p>
            <Show when={g().nextLevelAt}>
              {(next) => (
                <div>
                  <div class="progress" role="progressbar" aria-label="Progress to the next level" aria-valuemin={g().levelStart} aria-valuemax={next()} aria-valuenow={g().coinsEarned}>
                    <span style={{ width: `${Math.min(100, ((g().coinsEarned - g().levelStart) / Math.max(1, next() - g().levelStart)) * 100)}%` }} />
                  </div>
                  <p class="small muted" style={{ margin: '0.25rem 0 0' }}>
                    {next() - g().coinsEarned} more coins to earn for level {g().level + 1} (spending never lowers it)
                  </p>
                </div>
              )}
            </Show>
          </div>
        )}
      </Show>
    </section>
  );
}
