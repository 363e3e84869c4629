/**
 * Coalesces concurrent single-item writes into one statement. While a flush is running, new items
 * wait and go out together in the next one, so under load a statement carries many items and when
 * idle an item goes out at once (no timer, no added latency). Each caller's promise settles only
 * after the statement that carried its item has committed.
 *
 * If a statement carrying several items fails, each item is retried on its own: one bad item then
 * fails alone instead of failing (and, through redelivery, repeatedly blocking) its neighbours.
 * That is safe because a failed statement wrote nothing.
 */
export interface Batcher<T, R> {
  add(item: T): Promise<R>;
}

export function createBatcher<T, R>(flush: (items: T[]) => Promise<R[]>, maxItems: number): Batcher<T, R> {
  type Waiter = { item: T; resolve: (r: R) => void; reject: (e: unknown) => void };
  let queue: Waiter[] = [];
  let running = false;

  const send = async (batch: Waiter[]): Promise<void> => {
    try {
      const results = await flush(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]!));
    } catch (err) {
      if (batch.length === 1) batch[0]!.reject(err);
      else await Promise.all(batch.map((w) => send([w])));
    }
  };

  const drain = async (): Promise<void> => {
    running = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, maxItems);
        queue = queue.slice(batch.length);
        await send(batch);
      }
    } finally {
      running = false;
    }
  };

  return {
    add(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!running) void drain();
      });
    },
  };
}
