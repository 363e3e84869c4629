import { createSignal } from 'solid-js';
import { unwrap } from 'solid-js/store';

/**
 * A task completed from its row stays where it was, ticked, with an Undo button right after its box,
 * until its toast goes. Focus stays where the person is (the box), Undo is one Tab away, and nothing
 * jumps. When the toast goes the row is `leaving`: still shown ticked until the list's next load
 * drops it (or shows a recurring task's next date).
 */
interface Held {
  toastId: number;
  leaving: boolean;
}
const [held, setHeld] = createSignal<ReadonlyMap<string, Held>>(new Map());

function update(fn: (m: Map<string, Held>) => unknown): void {
  setHeld((m) => {
    const next = new Map(m);
    fn(next);
    return next;
  });
}

/** The toast of a task completed a moment ago from its row, while its row is still shown. */
export const justCompleted = (id: string): Held | undefined => held().get(id);

export const holdCompleted = (id: string, toastId: number): void => update((m) => m.set(id, { toastId, leaving: false }));

/** Its toast went: the next load of the list may drop the row. */
export const letGo = (id: string): void => update((m) => m.has(id) && m.set(id, { ...m.get(id)!, leaving: true }));

/** Undone, or its row is gone. */
export const forget = (id: string): void => update((m) => m.delete(id));

/**
 * For a list's fetcher on a refetch (`createResource`'s `{ value, refetching }`): a row completed a
 * moment ago keeps its place and its looks until its toast goes (a recurring task's next date, or
 * its absence from an open list, shows then), while every other row is brought up to date at once
 * (the next task of a sequential topic, say).
 */
export function keepJustCompleted<T extends { id: string }>(stored: readonly T[] | undefined, next: T[]): T[] {
  const previous = stored && unwrap(stored); // the plain objects under a reconciled store
  const frozen = previous?.filter((t) => held().get(t.id)?.leaving === false) ?? [];
  if (frozen.length === 0) return next;
  const byId = new Map(frozen.map((t) => [t.id, t]));
  const out = next.map((t) => byId.get(t.id) ?? t);
  for (const t of frozen) if (!next.some((n) => n.id === t.id)) out.splice(Math.min(previous!.indexOf(t), out.length), 0, t);
  return out;
}
