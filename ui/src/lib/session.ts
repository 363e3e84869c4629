import { createResource, createRoot } from 'solid-js';
import { ApiError, getOutsideTable } from './api.ts';
import { clearCache, read } from './cache.ts';

export interface Me {
  id: string;
  email: string;
  name: string | null;
  isAdmin: boolean;
  secondFactorOk: boolean;
  method: string;
}

/** Who is signed in; null when anonymous. One resource for the whole app, refetched after sign-in changes. */
export const session = createRoot(() => {
  const [me, { refetch, mutate }] = createResource<Me | null>(async () => {
    try {
      // From the cache when offline: a reload without a network opens the app, not "Loading…" (bug 3).
      return await read('/api/auth/me');
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 404)) {
        // Nobody signed in: nothing kept from an earlier session stays readable.
        await clearCache();
        return null;
      }
      throw err;
    }
  });
  /**
   * The key for data that needs a fully signed-in user: the user id once the second factor is settled,
   * false before. Shared resources take it as their source, so they wait for sign-in (no 401/403 kept
   * from the sign-in pages) and fetch afresh whenever a different user or session state arrives.
   */
  const ready = () => {
    const m = me.latest;
    return m && m.secondFactorOk ? m.id : false;
  };
  return { me, refetch, mutate, ready };
});

/** Auth.js signs out with a CSRF-protected POST; afterwards the browser goes to the sign-in page. */
export async function signOut(): Promise<void> {
  const { csrfToken } = await getOutsideTable<{ csrfToken: string }>('/api/auth/csrf');
  await fetch('/api/auth/signout', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-auth-return-redirect': '1' },
    body: new URLSearchParams({ csrfToken, callbackUrl: '/login' }),
  });
  session.mutate(null);
  await clearCache();
  location.assign('/login');
}
