/**
 * Coalesces concurrent single-item writes into one statement. The items added in one synchronous run
 * (the events of one message, handed over together) go out together once it ends (a microtask: no
 * timer, no added latency); while a flush is running, new items wait and go out together in the next
 * one, so under load a statement carries many items. Each caller's promise settles only after the
 * statement that carried its item has committed.
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
  /** a drain is running or about to start (queued as a microtask) */
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
        if (running) return;
        running = true;
        queueMicrotask(() => void drain());
      });
    },
  };
}
