/**
 * A timer for work that comes due at known times and is otherwise announced (a kick, a broadcast):
 * it wakes once, at the earliest time asked of it, and never sleeps longer than `maxSleepMs` from
 * the moment it was set, so a missed announcement (a lost broadcast, another replica's insert, a
 * replica that died before its kick) costs at most that much delay. An idle process wakes every
 * `maxSleepMs` instead of polling on a short period (tools/bench/idle.ts). The reminder timer and
 * the webhook delivery worker run on it.
 */
export interface WakeTimer {
  /** wake at `at` (ms since the epoch; Infinity: only the longest sleep), unless already waking earlier */
  wakeAt(at: number): void;
  stop(): void;
}

export function wakeTimer(onWake: () => void, maxSleepMs: number): WakeTimer {
  let timer: NodeJS.Timeout | undefined;
  let target = Infinity;
  let stopped = false;
  return {
    wakeAt(at) {
      if (stopped) return;
      const wake = Math.min(at, Date.now() + maxSleepMs);
      if (timer && wake >= target) return;
      clearTimeout(timer);
      target = wake;
      timer = setTimeout(
        () => {
          timer = undefined;
          target = Infinity;
          onWake();
        },
        Math.max(0, wake - Date.now()),
      );
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      target = Infinity;
    },
  };
}
