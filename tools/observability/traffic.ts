import { randomUUID } from 'node:crypto';
import { createLogger, createPool } from '@tasksvc/runtime';
import { expect } from 'vitest';
import { startReceiver, type Receiver } from '../../services/webhook/test/support.ts';
import { createUserWithApiKey } from '../testenv/users.ts';

/**
 * Traffic for the observability tests, through the public API of a running system: a user with an
 * API key, a local receiver behind two webhook endpoints (one that fails its first request with 500
 * and delivers afterwards, one that refuses with 400: a delivery failure) and an ntfy channel.
 * Every request it sends to the gateway is counted in `sent`.
 */
export interface Traffic {
  readonly rx: Receiver;
  readonly userId: string;
  /** requests sent to the gateway so far */
  readonly sent: number;
  call(method: string, path: string, body?: unknown): Promise<Response>;
  /** `n` task creates (201 each); each causes one delivery per endpoint */
  createTasks(n: number, title?: string): Promise<void>;
  /** a create with an empty title: 400 VALIDATION_FAILED (the gateway refuses it; no bus request) */
  invalidCreate(): Promise<void>;
  /** a task that does not exist: 404 from the tasks service (a `rejected` bus request) */
  notFound(): Promise<void>;
  /** the first page of tasks */
  list(): Promise<void>;
  /** one call of POST /api/cron */
  cron(): Promise<void>;
  /** a test notification on the ntfy channel */
  notify(): Promise<void>;
  close(): Promise<void>;
}

/** Requests to the endpoint's path `/flaky` get 500 once, then 200; `/refuse` always 400; anything else 200. */
export async function startTraffic(url: string, databaseUrl: string, opts: { userId?: string } = {}): Promise<Traffic> {
  const rx = await startReceiver();
  let flakyFailed = false;
  rx.respond = (req) => {
    if (req.path === '/flaky' && !flakyFailed) {
      flakyFailed = true;
      return { status: 500 };
    }
    return { status: req.path === '/refuse' ? 400 : 200 };
  };
  const pool = createPool(databaseUrl, createLogger('traffic', 'silent'));
  const user = await createUserWithApiKey(pool, { id: opts.userId }).finally(() => pool.end());
  let sent = 0;
  const call = (method: string, path: string, body?: unknown) => {
    sent++;
    return fetch(`${url}${path}`, {
      method,
      headers: { authorization: user.authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  };
  const expectStatus = async (res: Promise<Response>, status: number) => {
    const r = await res;
    expect(r.status, await r.text()).toBe(status);
  };
  for (const path of ['/flaky', '/refuse']) await expectStatus(call('POST', '/api/settings/webhooks', { url: `${rx.url}${path}`, events: ['task.created'] }), 201);
  await expectStatus(call('PUT', '/api/settings/notification-channels/ntfy', { config: { server: `${rx.url}/ntfy`, topic: 'observability' } }), 200);
  return {
    rx,
    userId: user.userId,
    get sent() {
      return sent;
    },
    call,
    async createTasks(n, title = 'measured') {
      for (let i = 0; i < n; i++) await expectStatus(call('POST', '/api/tasks', { title: `${title} ${i + 1}` }), 201);
    },
    invalidCreate: () => expectStatus(call('POST', '/api/tasks', { title: '' }), 400),
    notFound: () => expectStatus(call('GET', `/api/tasks/${randomUUID()}`), 404),
    list: () => expectStatus(call('GET', '/api/tasks'), 200),
    cron: () => expectStatus(call('POST', '/api/cron'), 200),
    notify: () => expectStatus(call('POST', '/api/settings/notification-channels/ntfy/test'), 200),
    close: () => rx.close(),
  };
}
