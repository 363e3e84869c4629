import { createConnection } from 'node:net';

/**
 * Poll until `fn` returns a truthy value and return it. A hang fails with `what` after `limitMs`
 * (a deadline against deadlock, not a timing assertion).
 */
export async function until<T>(fn: () => T | null | undefined | false | Promise<T | null | undefined | false>, what: string, limitMs = 30_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `until` for checks that throw while the thing is not there yet (an API answering 404 before an
 * object exists): a throw counts as "not yet", and the last error is named when it gives up.
 */
export async function eventually<T>(what: string, check: () => Promise<T | null | undefined | false>, limitMs = 45_000): Promise<T> {
  let last: unknown;
  const attempt = async () => {
    try {
      return await check();
    } catch (err) {
      last = err;
      return undefined;
    }
  };
  try {
    return await until(attempt, what, limitMs);
  } catch (err) {
    if (last === undefined) throw err;
    throw new Error(`${(err as Error).message}: ${last instanceof Error ? last.message : JSON.stringify(last)}`, { cause: err });
  }
}

/** Wait until something accepts TCP connections on 127.0.0.1:`port`; resolves with the milliseconds it took. */
export async function waitForPort(port: number, limitMs = 90_000): Promise<number> {
  const t0 = Date.now();
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        const s = createConnection({ port, host: '127.0.0.1' }, () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      }),
    `a listener on port ${port}`,
    limitMs,
  );
  return Date.now() - t0;
}
