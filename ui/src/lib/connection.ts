import { createRoot, createSignal, onCleanup, type Resource } from 'solid-js';

/**
 * Whether the browser has a network, and what to run when it comes back: shared data and a failed
 * screen fetch again by themselves, so a short connection loss never leaves the app saying
 * "offline" after it is over (issue 55, bug 1).
 */
export const connection = createRoot(() => {
  const [online, setOnline] = createSignal(typeof navigator === 'undefined' ? true : navigator.onLine);
  const listeners = new Set<() => void>();
  if (typeof window !== 'undefined') {
    window.addEventListener('online', () => {
      setOnline(true);
      for (const fn of listeners) fn();
    });
    window.addEventListener('offline', () => setOnline(false));
  }
  return {
    online,
    /** what came back with the connection loads again (also after queued changes were sent) */
    reload(): void {
      for (const fn of listeners) fn();
    },
    /** run `fn` each time the connection returns; returns the unsubscribe */
    onReconnect(fn: () => void): () => void {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  };
});

/**
 * A resource's latest value that never throws: while a refetch failed (offline), the last value it
 * had stays readable. Reading `.latest` of a failed resource throws its error into the screen's
 * error boundary, where a shared resource kept every screen broken until a reload.
 */
export function lastGood<T>(res: Resource<T>): () => T | undefined {
  let last: T | undefined;
  return () => {
    if (res.error) return last;
    const v = res.latest;
    if (v !== undefined) last = v;
    return v;
  };
}

/** Fetch a screen's resource again each time the connection returns (for as long as the screen is open). */
export function refetchOnReconnect(refetch: () => unknown): void {
  onCleanup(connection.onReconnect(() => void refetch()));
}
