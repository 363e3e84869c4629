import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, get, post } from '../lib/api.ts';
import { formatDateTime } from '../lib/dates.ts';
import { refreshGame } from '../lib/game.ts';
import { toast } from '../lib/toast.ts';
import type { WishlistItem } from '../lib/types.ts';
import { AsyncButton, Empty, ErrorBanner, Field, Spinner } from '../components/ui.tsx';

/** Things to buy with the coins tasks earn (reference §6): add with a price, buy, or let go. */
export default function Wishlist(): JSX.Element {
  const [list, { refetch }] = createResource(() => get('/api/wishlist'));
  const [title, setTitle] = createSignal('');
  const [price, setPrice] = createSignal('50');
  const [error, setError] = createSignal<string | undefined>();
  const open = () => (list.latest?.items ?? []).filter((i) => i.status === 'OPEN');
  const closed = () => (list.latest?.items ?? []).filter((i) => i.status !== 'OPEN');
  const coins = () => list.latest?.coins ?? 0;
  const changed = () => {
    void refetch();
    refreshGame();
  };

  async function add(e: SubmitEvent) {
    e.preventDefault();
    setError(undefined);
    const typed = title();
    // Cleared at once, so the next wish can be typed while this one saves; put back if saving fails.
    setTitle('');
    try {
      await post('/api/wishlist', { body: { title: typed.trim(), price: Number(price()) } });
      changed();
    } catch (err) {
      if (!title()) setTitle(typed);
      setError(err instanceof ApiError ? (err.issues?.[0]?.message ?? err.message) : String(err));
    }
  }

  async function buy(item: WishlistItem) {
    await post('/api/wishlist/:id/buy', { params: { id: item.id } });
    toast(`Bought “${item.title}” for ${item.price} coins. Enjoy!`);
    changed();
  }

  return (
    <>
      <div class="page-head">
        <h1>Wishlist</h1>
        <p class="muted" style={{ margin: 0 }} data-testid="wishlist-coins">
          {coins()} coins to spend
        </p>
      </div>
      <div class="stack">
        <section class="card">
          <form class="row" onSubmit={add} aria-label="Add a wish">
            <Field label="Wish" error={error()}>
              {(id, describedBy) => <input id={id} aria-describedby={describedBy} required maxLength={200} value={title()} onInput={(e) => setTitle(e.currentTarget.value)} placeholder="A new book" />}
            </Field>
            <Field label="Price (coins)">
              {(id) => <input id={id} type="number" min="0" max="1000000" required value={price()} onInput={(e) => setPrice(e.currentTarget.value)} style={{ width: '8rem' }} />}
            </Field>
            <button class="primary" type="submit">
              Add
            </button>
          </form>
        </section>
        <Show when={!list.error} fallback={<ErrorBanner error={list.error} />}>
          <Show when={list.latest} fallback={<Spinner />}>
            <section class="card" aria-labelledby="wishes-h">
              <h2 id="wishes-h">Open wishes</h2>
              <Show when={open().length > 0} fallback={<Empty>Nothing on your wishlist yet. Add something worth working for.</Empty>}>
                <ul class="plain stack" style={{ gap: '0.5rem' }}>
                  <For each={open()}>
                    {(item) => (
                      <li class="row between" data-testid="wish">
                        <span>
                          <strong>{item.title}</strong> · {item.price} coins
                          <Show when={item.price > coins()}>
                            <span class="small muted"> ({item.price - coins()} to go)</span>
                          </Show>
                        </span>
                        <span class="row">
                          <AsyncButton class="primary small" disabled={item.price > coins()} action={() => buy(item)} aria-label={`Buy ${item.title}`}>
                            Buy
                          </AsyncButton>
                          <AsyncButton class="small" action={async () => (await post('/api/wishlist/:id/discard', { params: { id: item.id } }), changed())} aria-label={`Discard ${item.title}`}>
                            Discard
                          </AsyncButton>
                        </span>
                      </li>
                    )}
                  </For>
                </ul>
              </Show>
            </section>
            <Show when={closed().length > 0}>
              <section class="card" aria-labelledby="history-h">
                <h2 id="history-h">History</h2>
                <ul class="plain stack small" style={{ gap: '0.25rem' }}>
                  <For each={closed()}>
                    {(item) => (
                      <li data-testid="wish-history">
                        {item.status === 'BOUGHT' ? 'Bought' : 'Discarded'} “{item.title}” ({item.price} coins), {formatDateTime(item.closedAt)}
                      </li>
                    )}
                  </For>
                </ul>
              </section>
            </Show>
          </Show>
        </Show>
      </div>
    </>
  );
}
