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
 *
 * `fair`: the waiting items are taken round-robin by key (one of each key in turn, the keys in the
 * order they first waited), and a statement stops at `maxWeight` (at least one item): a burst of one
 * key (one user's bulk action fanning out to 2,000 deliveries) then goes out in statements of a
 * bounded size, and another key's item waits for at most the one running, not for the whole burst.
 */
export interface Batcher<T, R> {
  add(item: T): Promise<R>;
}

export interface FairBatching<T> {
  key(item: T): string;
  weight(item: T): number;
  maxWeight: number;
}

/** Up to `maxItems` items of the queue, round-robin by key, until their weight reaches `maxWeight`. */
export function takeFairly<T>(queue: readonly T[], maxItems: number, fair: FairBatching<T>): { batch: T[]; rest: T[] } {
  const byKey = new Map<string, T[]>();
  for (const item of queue) {
    const k = fair.key(item);
    const list = byKey.get(k);
    if (list) list.push(item);
    else byKey.set(k, [item]);
  }
  const taken = new Set<T>();
  const batch: T[] = [];
  let weight = 0;
  for (let turn = 0; batch.length < maxItems && weight < fair.maxWeight; turn++) {
    let any = false;
    for (const list of byKey.values()) {
      const item = list[turn];
      if (item === undefined) continue;
      any = true;
      batch.push(item);
      taken.add(item);
      weight += fair.weight(item);
      if (batch.length >= maxItems || weight >= fair.maxWeight) break;
    }
    if (!any) break;
  }
  return { batch, rest: queue.filter((item) => !taken.has(item)) };
}

export function createBatcher<T, R>(flush: (items: T[]) => Promise<R[]>, maxItems: number, fair?: FairBatching<T>): Batcher<T, R> {
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
        let batch: Waiter[];
        if (fair) ({ batch, rest: queue } = takeFairly(queue, maxItems, { key: (w) => fair.key(w.item), weight: (w) => fair.weight(w.item), maxWeight: fair.maxWeight }));
        else {
          batch = queue.slice(0, maxItems);
          queue = queue.slice(batch.length);
        }
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
