import type { Logger } from '../logger.ts';
import type { Pool } from './pool.ts';

/**
 * The database is out of reach (refused, dropped or timed-out connection, a name not resolvable yet,
 * the server shutting down or starting): a state that passes by itself. A request gets a 503 the
 * client may retry, not an internal error; a service starting meanwhile waits instead of exiting.
 */
export function databaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) return true;
  if (/^(08...|57P0[1-3])$/.test(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(typeof e?.message === 'string' ? e.message : '');
}

export interface WaitOptions {
  /** first pause between attempts; doubles up to maxDelayMs */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** told before each pause (e.g. the readiness probe's reason) */
  onWaiting?: (reason: string) => void;
}

/**
 * Resolves once the database answers `SELECT 1`. While it is out of reach (databaseUnavailable) it
 * retries with a short capped backoff — a pod started during an outage then serves within seconds of
 * the database's return, where exiting would have put it into the kubelet's crash-loop backoff
 * (minutes). Any other failure (wrong password, no such database) is a configuration error: thrown.
 */
export async function waitForDatabase(pool: Pool, log: Logger, opts: WaitOptions = {}): Promise<void> {
  const maxDelayMs = opts.maxDelayMs ?? 5_000;
  let delay = opts.initialDelayMs ?? 250;
  const t0 = Date.now();
  let attempts = 0;
  let lastLog = 0;
  for (;;) {
    attempts++;
    try {
      await pool.query('SELECT 1');
      if (attempts > 1) log.info({ attempts, waitedSeconds: Math.round((Date.now() - t0) / 1000) }, 'database reachable: starting');
      return;
    } catch (err) {
      if (!databaseUnavailable(err)) throw err;
      const reason = `waiting for the database (${(err as { code?: string }).code ?? (err as Error).message})`;
      opts.onWaiting?.(reason);
      // one line at once, then one every 10 s: a long outage must not flood the log
      if (Date.now() - lastLog >= 10_000) {
        lastLog = Date.now();
        log.warn({ attempts, waitedSeconds: Math.round((Date.now() - t0) / 1000), err: (err as Error).message }, reason);
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(maxDelayMs, delay * 2);
    }
  }
}
