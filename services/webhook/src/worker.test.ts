import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, createOutbound, migrate } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestEvents } from './db/deliveries.ts';
import { startWebhookHarness, until, type Harness } from '../test/support.ts';
import { webhookService } from './service.ts';
import { startDeliveryWorker } from './worker.ts';

/** A receiver that holds every request until released, counting how many it holds at once. */
async function holdingReceiver() {
  let held: (() => void)[] = [];
  const r = { url: '', arrived: 0, open: 0, maxOpen: 0, holding: true, release: () => held.splice(0).forEach((f) => f()) };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      r.arrived++;
      r.open++;
      r.maxOpen = Math.max(r.maxOpen, r.open);
      const answer = () => {
        r.open--;
        res.writeHead(204).end();
      };
      if (r.holding) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    r,
    close: async () => {
      r.holding = false;
      r.release();
      held = [];
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

let h: Harness;
beforeAll(async () => {
  // no service: the worker under test is the only one claiming
  h = await startWebhookHarness({ OUTBOUND_ALLOW_LIST: '127.0.0.1' }, { service: false });
  await migrate(h.pool, { ...webhookService.migrations!, log: createLogger('worker-test', 'silent') });
});
afterAll(async () => {
  await h?.stop();
});

async function queue(userId: string, url: string, events: number): Promise<void> {
  await h.pool.query('INSERT INTO webhook.endpoints (id, user_id, url) VALUES ($1, $2, $3)', [randomUUID(), userId, url]);
  const body = JSON.stringify({ event: 'task.updated' });
  await ingestEvents(h.pool, Array.from({ length: events }, () => ({ msgId: randomUUID(), userId, event: 'task.updated', body })));
}

const statusOf = async (userId: string) =>
  (await h.pool.query<{ status: string; attempts: number; lease: string | null }>('SELECT status, attempts, lease FROM webhook.deliveries WHERE user_id = $1', [userId])).rows;

/**
 * Rows for `slowPaths` of one hanging receiver (one user each), a worker bounded to 3 per host:
 * the hanging receiver never holds more than 3 requests, another host is served meanwhile, and
 * stop gives the unstarted rows back, their attempts uncounted.
 */
async function checkHostBound(slowPaths: string[], eventsEach: number): Promise<void> {
  const slow = await holdingReceiver();
  const fast = await holdingReceiver();
  fast.r.holding = false;
  const slowUsers = slowPaths.map(() => randomUUID());
  const fastUser = randomUUID();
  for (const [i, path] of slowPaths.entries()) await queue(slowUsers[i]!, `${slow.r.url}${path}`, eventsEach);
  const worker = startDeliveryWorker({ pool: h.pool, outbound: createOutbound({ allowList: ['127.0.0.1'] }), config: h.config, log: createLogger('worker-test', 'silent'), concurrency: 8, perHost: 3 });
  try {
    await until(async () => slow.r.arrived >= 3, 'slow receiver reached');
    await queue(fastUser, `${fast.r.url}/fast`, 5);
    worker.kick();
    await until(async () => (await statusOf(fastUser)).every((d) => d.status === 'delivered'), 'another host served while the slow one hangs');
    expect(slow.r.maxOpen).toBe(3);
    slow.r.release();
    await until(async () => slow.r.arrived >= 6, 'next slow attempts');
    expect(slow.r.maxOpen).toBe(3);
  } finally {
    slow.r.holding = false;
    slow.r.release();
    await worker.stop();
  }
  // after stop: nothing is left leased by the stopped worker, and no attempt was counted for a row never sent
  const rows = (await Promise.all(slowUsers.map(statusOf))).flat();
  expect(rows.filter((d) => d.lease !== null)).toEqual([]);
  expect(rows.reduce((n, d) => n + d.attempts, 0)).toBe(slow.r.arrived);
  await Promise.all([slow.close(), fast.close()]);
}

/** h.pool, counting the claims run on it (claimDue's statement is the one with `due_endpoints`): as they are sent, and once answered. */
function countingPool() {
  const counted = { claims: 0, answered: 0 };
  const pool = new Proxy(h.pool, {
    get(target, key) {
      if (key === 'query')
        return (...args: unknown[]) => {
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
          const result = (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
          if (text?.includes('due_endpoints')) {
            counted.claims++;
            void result.finally(() => counted.answered++);
          }
          return result;
        };
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { pool, counted };
}

describe('delivery worker', () => {
  // The claim after the busy host reached its bound skips it and finds nothing; claiming again while
  // only rows of that host arrive would walk its whole backlog for nothing each time. Rows for
  // another host are claimed at once, and a claim that took all there was (fewer than it asked, no
  // host cut at the bound) is not followed by an empty one. No poll: only kicks and finished attempts
  // drive claims here.
  it('does not repeat a claim that found nothing while only rows for hosts at their bound come in', async () => {
    const slow = await holdingReceiver();
    const fast = await holdingReceiver();
    fast.r.holding = false;
    const [slowUser, fastUser] = [randomUUID(), randomUUID()];
    await queue(slowUser, `${slow.r.url}/slow`, 6);
    const { pool, counted } = countingPool();
    const worker = startDeliveryWorker({ pool, outbound: createOutbound({ allowList: ['127.0.0.1'] }), config: h.config, log: createLogger('worker-test', 'silent'), concurrency: 8, perHost: 3, maxSleepMs: 3_600_000 });
    try {
      await until(async () => slow.r.arrived === 3, 'slow receiver at its bound');
      // the first claim took the slow host's 3; the second, skipping it, found nothing
      // (answered: a kick while it is still running could not know that it found nothing)
      await until(async () => counted.answered === 2, 'the empty claim');
      const slowHost = new URL(slow.r.url).host;
      worker.kick([slowHost]);
      worker.kick([slowHost]);
      expect(counted.claims).toBe(2); // a claim is counted as it is sent: none was
      await queue(fastUser, `${fast.r.url}/fast`, 2);
      worker.kick([new URL(fast.r.url).host]);
      expect(counted.claims).toBe(3);
      await until(async () => (await statusOf(fastUser)).every((d) => d.status === 'delivered'), 'the other host served');
      expect(counted.claims).toBe(3); // its 2 rows were all there was: no claim after it
      // a free slot of the slow host: claimed again without a kick
      slow.r.release();
      await until(async () => slow.r.arrived === 6, 'the slow host next rows');
    } finally {
      slow.r.holding = false;
      slow.r.release();
      await worker.stop();
      await Promise.all([slow.close(), fast.close()]);
    }
  });

  // No poll: an idle worker sleeps until what it knows comes due. Told of new rows, it claims them at
  // once; a retry it recorded wakes it at the retry's time, with nothing else to wake it (longest sleep an hour).
  it('delivers at once when woken, and a retry it recorded at the retry time, without a poll', async () => {
    let calls = 0;
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(++calls === 1 ? 503 : 204).end());
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const user = randomUUID();
    const { pool, counted } = countingPool();
    const config = { ...h.config, WEBHOOK_RETRY_SCHEDULE: [0.2] };
    const worker = startDeliveryWorker({ pool, outbound: createOutbound({ allowList: ['127.0.0.1'] }), config, log: createLogger('worker-test', 'silent'), maxSleepMs: 3_600_000 });
    try {
      await until(async () => counted.answered === 1, 'the first claim (nothing due)');
      await queue(user, `http://127.0.0.1:${(server.address() as AddressInfo).port}/once-unavailable`, 1);
      worker.kick();
      const [row] = await until(async () => {
        const rows = await statusOf(user);
        return rows[0]?.status === 'delivered' && rows;
      }, 'delivered on the retry');
      expect(row).toMatchObject({ attempts: 2, lease: null });
      expect(calls).toBe(2);
    } finally {
      await worker.stop();
      await new Promise((done) => server.close(done));
    }
  });

  // Rows no wake-up announced (another replica ingested them and died, or is full): the worker finds
  // them at its longest sleep after its last claim.
  it('delivers rows it was not told of after its longest sleep', async () => {
    const rx = await holdingReceiver();
    rx.r.holding = false;
    const user = randomUUID();
    const { pool, counted } = countingPool();
    const worker = startDeliveryWorker({ pool, outbound: createOutbound({ allowList: ['127.0.0.1'] }), config: h.config, log: createLogger('worker-test', 'silent'), maxSleepMs: 300 });
    try {
      await until(async () => counted.answered >= 1, 'the first claim (nothing due)');
      await queue(user, `${rx.r.url}/unannounced`, 3);
      await until(async () => (await statusOf(user)).every((d) => d.status === 'delivered'), 'unannounced rows delivered');
      expect(rx.r.arrived).toBe(3);
    } finally {
      await worker.stop();
      await rx.close();
    }
  });

  it('bounds attempts per receiver: a hanging receiver holds its share, others are still served; stop gives unstarted rows back', () => checkHostBound(['/slow'], 12));

  // two users' endpoints on the same host and port (as on a self-hosted automation server), told apart by path only:
  // bounded per endpoint it would have been 3 + 3
  it('bounds attempts per receiving host: endpoints of several users on one hanging receiver share one bound', () => checkHostBound(['/a', '/b'], 6));
});
