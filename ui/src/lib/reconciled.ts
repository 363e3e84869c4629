import type { Signal } from 'solid-js';
import { createStore, reconcile, unwrap } from 'solid-js/store';

/**
 * Storage for a resource (`createResource(…, { storage: reconciled })`) that merges each refetch into
 * the previous value by `id`: a task that is still there keeps its object, so its row keeps its DOM
 * and the focus stays where it was (a fresh array of fresh objects would rebuild every row).
 */
export function reconciled<T>(value: T | undefined): Signal<T | undefined> {
  const [store, setStore] = createStore<{ value: T | undefined }>({ value });
  const get = () => store.value;
  const set = (v: unknown) => {
    const next = typeof v === 'function' ? (v as (prev: T | undefined) => T | undefined)(unwrap(store).value) : (v as T | undefined);
    setStore('value', reconcile(next, { key: 'id' }) as never);
    return store.value;
  };
  return [get, set] as Signal<T | undefined>;
}
