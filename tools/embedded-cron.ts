import { cronRunRpc } from '@tasksvc/proto';
import type { Bus, Logger } from '@tasksvc/runtime';

/** The spec's cron cadence: the operator's CronJob calls /api/cron every 5 minutes. */
export const EMBEDDED_CRON_INTERVAL_MS = 5 * 60_000;
const CRON_TIMEOUT_MS = 120_000;

/**
 * `npm start` has nobody calling /api/cron, so it runs the dispatcher itself: once at start, then
 * every 5 minutes. An external call may still come; the scheduler's claims make the two never
 * double up (a bucket already done is skipped).
 */
export function startEmbeddedCron(bus: Bus, log: Logger, intervalMs = EMBEDDED_CRON_INTERVAL_MS): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running) return; // a slow run is never overlapped by the next tick
    running = bus
      .request(cronRunRpc, {}, { timeoutMs: CRON_TIMEOUT_MS })
      .then((summary) => log.debug({ summary }, 'embedded cron ran'))
      .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'embedded cron run failed; retrying at the next tick'))
      .finally(() => (running = undefined));
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
