import { createResource, Show, type JSX } from 'solid-js';
import { ApiError, get, post } from '../lib/api.ts';
import { gameSummary, refreshGame } from '../lib/game.ts';
import { toast, toastError } from '../lib/toast.ts';
import type { Task } from '../lib/types.ts';
import { AsyncButton, Spinner } from './ui.tsx';

interface QuestReply {
  task: Task | null;
  completed: boolean;
  postponesLeft?: number;
}

/** Today's daily quest: complete it, postpone it to tomorrow, or roll a different one. */
export function QuestCard(props: { onChange: () => void }): JSX.Element {
  const [quest, { refetch }] = createResource(async () => {
    try {
      return await get<QuestReply>('/api/daily-quest');
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND') return undefined;
      throw err;
    }
  });
  const after = (msg: string) => {
    void refetch();
    refreshGame();
    props.onChange();
    toast(msg);
  };
  return (
    <section class="card quest" aria-labelledby="quest-h" data-testid="daily-quest">
      <h2 id="quest-h">★ Daily quest</h2>
      <Show when={!quest.loading} fallback={<Spinner />}>
        <Show when={!quest.error} fallback={<p class="muted">{(quest.error as Error)?.message}</p>}>
          <Show when={quest()?.task} fallback={<p class="muted">No quest today: add a task and the quest picks from your open tasks.</p>}>
            {(t) => (
              <>
                <p class="quest-title" data-testid="quest-title">
                  {t().title}
                </p>
                <Show
                  when={!quest()!.completed}
                  fallback={
                    <p class="banner ok" role="status">
                      Quest complete! See you tomorrow.
                    </p>
                  }
                >
                  <div class="row">
                    <AsyncButton class="primary" action={async () => (await post(`/api/tasks/${t().id}/complete`), after('Quest complete!'))}>
                      Complete
                    </AsyncButton>
                    <AsyncButton
                      action={async () => {
                        try {
                          await post('/api/daily-quest/postpone');
                          after('Postponed to tomorrow');
                        } catch (err) {
                          if (err instanceof ApiError && err.code === 'LIMIT_REACHED') toast('Daily postpone limit reached.', { kind: 'error' });
                          else toastError(err);
                        }
                      }}
                    >
                      Postpone
                    </AsyncButton>
                    <AsyncButton action={async () => (await post('/api/daily-quest'), after('New quest rolled'))}>Re-roll</AsyncButton>
                  </div>
                  <Show when={quest()!.postponesLeft !== undefined}>
                    <p class="small muted" style={{ 'margin-top': '0.5rem' }}>
                      Postpones left today: {quest()!.postponesLeft}
                    </p>
                  </Show>
                </Show>
              </>
            )}
          </Show>
        </Show>
      </Show>
    </section>
  );
}

/** Streak, shield, coins and level, with progress towards the next level. */
export function StreakCard(): JSX.Element {
  const s = gameSummary;
  return (
    <section class="card" aria-labelledby="streak-h" data-testid="streak-card">
      <h2 id="streak-h">Streak &amp; coins</h2>
      <Show when={s()} fallback={<p class="muted">Complete a task to start your streak.</p>}>
        {(g) => (
          <div class="kpis">
            <div class="kpi">
              <div class="value">{g().streak}</div>
              <div class="label">day streak</div>
            </div>
            <div class="kpi">
              <div class="value">{g().coins}</div>
              <div class="label">coins</div>
            </div>
            <div class="kpi">
              <div class="value">{g().level}</div>
              <div class="label">level</div>
            </div>
          </div>
        )}
      </Show>
    </section>
  );
}

