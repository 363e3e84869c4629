import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { fileNats, serveTestIdentities, testSystemConfig } from '../../../tools/testenv/index.ts';
import { startTarpits } from '../../../tools/testenv/tarpits.ts';
import { callAs, startReceiver, until, type Receiver } from '../test/support.ts';

/**
 * Issue 56, finding 1: one user's webhooks must not slow down another's. User A has 10 endpoints
 * that take requests and never answer (tarpits, each a receiving host of its own) and runs a bulk
 * action on 200 tasks: 2,000 deliveries. User B's deliveries meanwhile must go out while every
 * request A's receivers got is still hanging (before the first of them times out); before fair
 * scheduling, A's rows filled every slot of the worker and B's waited for the time-outs. Then A's
 * receivers recover and all 2,000 arrive, each once: nothing of A's is lost. (B's latency against
 * B alone is a ratio the bench reports, tools/bench/webhooks.ts `fair`; timing is not asserted here.)
 */

// the longest allowed: B's 20 tasks must go out before the first of A's requests times out, on however loaded a machine
const TIMEOUT_SECONDS = 60;

/** Ten tarpits, each a receiving host of its own; what they answered once recovered, by delivery id. */
async function tarpits(count: number) {
  const answered = new Map<string, number>();
  const pits = await startTarpits(count, (req, _body, res) => {
    const id = String(req.headers['x-service-delivery']);
    answered.set(id, (answered.get(id) ?? 0) + 1);
    res.writeHead(204).end();
  });
  return { ...pits, answered, urls: pits.ports.map((port, i) => `http://127.0.0.1:${port}/tarpit-${i}`) };
}

const nats = fileNats();
let sys: RunningSystem;
let pits: Awaited<ReturnType<typeof tarpits>>;
let rx: Receiver;

beforeAll(async () => {
  pits = await tarpits(10);
  rx = await startReceiver();
  const config = await testSystemConfig(
    { OUTBOUND_ALLOW_LIST: '127.0.0.1', WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS), WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1' },
    { natsUrl: nats.url() },
  );
  sys = await startSystem(config, { services: ALL_SERVICES.filter((s) => ['tasks', 'webhook', 'gateway'].includes(s.name)) });
  serveTestIdentities(sys.bus);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await pits?.close();
  await rx?.close();
});

const call = (user: string, method: string, url: string, body?: unknown) => callAs(sys.url, user, method, url, body);

/** B creates `n` tasks one after another, each once the previous one's delivery arrived; each task's ms from its 201 to its delivery. */
async function bCreates(userB: string, n: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const before = rx.requests.length;
    const created = await call(userB, 'POST', '/api/tasks', { title: `B ${i}` });
    expect(created.status).toBe(201);
    const at = performance.now();
    await until(() => rx.requests.length > before, `B's delivery ${i}`, 60_000);
    latencies.push(performance.now() - at);
  }
  return latencies;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1]!;

describe('fair webhook delivery between users', () => {
  it("B's deliveries go out while A's 2,000 hang on 10 tarpits; then all of A's arrive, each once", { timeout: 300_000 }, async () => {
    const [userA, userB] = [randomUUID(), randomUUID()];
    // A's 200 tasks, created before its endpoints exist (their events go nowhere)
    const ids: string[] = [];
    for (let i = 0; i < 200; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => call(userA, 'POST', '/api/tasks', { title: `A ${i + j}` })));
      for (const r of batch) {
        expect(r.status).toBe(201);
        ids.push(r.json.task?.id ?? r.json.id);
      }
    }
    expect((await call(userB, 'POST', '/api/settings/webhooks', { url: `${rx.url}/b`, events: ['task.created'] })).status).toBe(201);
    const alone = await bCreates(userB, 20);
    for (const url of pits.urls) expect((await call(userA, 'POST', '/api/settings/webhooks', { url })).status).toBe(201);

    // the bulk action: 200 task.updated events, 10 deliveries each
    expect((await call(userA, 'PATCH', '/api/tasks/bulk', { action: 'setPriority', taskIds: ids, priority: 'HIGH' })).json).toEqual({ success: true, affected: 200 });
    await until(() => pits.state.held > 0, "A's first requests hanging");
    const loaded = await bCreates(userB, 20);
    // every one of B's went out while A's requests were all still hanging: none had timed out yet
    expect(pits.state.closedBySender).toBe(0);
    // A's receivers never held more than their budget: 8 requests each until one answers in time
    expect(pits.state.maxHeld).toBeLessThanOrEqual(80);
    console.info(`B's delivery p99: ${p99(alone).toFixed(0)} ms alone, ${p99(loaded).toFixed(0)} ms while A's bulk action hung (information only: the bench measures it)`);

    // A's receivers recover: every delivery arrives, each exactly once, none left failed
    pits.recover();
    await until(
      async () => {
        const { rows } = await sys.pool.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM webhook.deliveries WHERE user_id = $1 GROUP BY status', [userA]);
        return rows.length === 1 && rows[0]!.status === 'delivered' && rows[0]!.n === '2000';
      },
      "all of A's 2,000 deliveries delivered",
      120_000,
    );
    expect(pits.answered.size).toBe(2000);
    expect([...pits.answered.values()].every((n) => n === 1)).toBe(true);
  });
});
