import { QueryClient } from '@tanstack/query-core';
import { persistQueryClient } from '@tanstack/query-persist-client-core';
import { createAsyncStoragePersister } from '@tanstack/query-async-storage-persister';
import { createStore, del as idbDel, get as idbGet, set as idbSet } from 'idb-keyval';
import { createSignal } from 'solid-js';
import { api, request, type Args, type PathOf, type ReplyOf } from './api.ts';

/**
 * Reads through TanStack Query's cache, persisted in IndexedDB (issue 55): every answer a screen
 * loaded is kept, so when the network is gone a read answers with the last data, also after a
 * reload offline. The screens keep their Solid resources; their fetchers call `read()`.
 */
const WEEK = 7 * 24 * 3600_000;

export const queryClient = new QueryClient({
  // networkMode 'always': offline a read fails at once (and falls back to the cache below) instead
  // of pausing until the network is back.
  defaultOptions: { queries: { gcTime: WEEK, retry: false, networkMode: 'always' } },
});

const store = createStore('tasksvc-cache', 'queries');
const persister = createAsyncStoragePersister({
  storage: { getItem: (k) => idbGet<string>(k, store), setItem: (k, v: string) => idbSet(k, v, store), removeItem: (k) => idbDel(k, store) },
  key: 'queries',
  throttleTime: 250,
});
// Bump when cached shapes change incompatibly: an older cache is then dropped, not misread.
const [, restored] = persistQueryClient({
  queryClient,
  persister,
  maxAge: WEEK,
  buster: 'v1',
  // A read that failed offline keeps its data but is in the error state, which is not kept by
  // default: then a reload offline would find nothing. What has data is kept.
  dehydrateOptions: { shouldDehydrateQuery: (q) => q.state.data !== undefined },
});

/** The answer shown came from the cache because the network failed (the shell says so). */
const [fromCache, setFromCache] = createSignal(false);
export { fromCache };

type Overlay = (path: string, data: unknown) => Promise<unknown>;
let overlay: Overlay = (_p, d) => Promise.resolve(d);
/** The write queue shows its waiting changes in what reads return (set by lib/outbox.ts). */
export function setOverlay(fn: Overlay): void {
  overlay = fn;
}

/**
 * GET the route through the cache: the network's answer when there is one (and it is kept); when the
 * request gets no answer at all (offline, server unreachable), the last kept answer. Errors the
 * server sent (401, 404…) are never hidden behind old data.
 */
export async function read<P extends PathOf<'GET'>>(route: P, ...parts: Args<'GET', P>): Promise<ReplyOf<'GET', P>> {
  type T = ReplyOf<'GET', P>;
  await restored.catch(() => undefined);
  const req = request('GET', route, ...parts);
  // Kept under the URL (params and query filled in), as the write queue's overlay reads it.
  const path = req.url;
  let data: T;
  try {
    data = await queryClient.fetchQuery({ queryKey: [path], queryFn: () => api(req), staleTime: 0 });
    setFromCache(false);
  } catch (err) {
    const cached = queryClient.getQueryData<T>([path]);
    if (!(err as { unreachable?: boolean }).unreachable || cached === undefined) throw err;
    setFromCache(true);
    data = cached;
  }
  // A copy: screens keep answers in Solid stores, which change what they hold in place; the
  // cache's own copy must stay as the server sent it.
  return (await overlay(path, structuredClone(data))) as T;
}

/** Forget every kept answer (sign-out, a session that ended): the next user sees none of them. */
export async function clearCache(): Promise<void> {
  queryClient.clear();
  await persister.removeClient();
}
