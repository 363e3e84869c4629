import { createPool, type Queryable } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem } from '../../../tools/system.ts';
import { testSystemConfig } from '../../../tools/testenv/index.ts';
import { createUserWithApiKey } from '../../../tools/testenv/users.ts';
import { buildGateway } from '../src/app.ts';
import { countCall } from '../src/db/rate-limits.ts';
import { BULK_BUCKET, WRITE_LIMITS_PER_MINUTE } from '../src/rate-limit.ts';

/**
 * Per-user write limits shared by every gateway replica through PostgreSQL: the whole system plus a
 * second gateway replica on its own pool. The counters of the current and the next minute are
 * seeded, so a minute boundary during the test cannot change the outcome.
 */
let system: RunningSystem;
let replica: FastifyInstance;
let replicaPool: ReturnType<typeof createPool>;
let replicaUrl: string;

beforeAll(async () => {
  system = await startSystem(await testSystemConfig({ RATE_LIMIT_WRITES: 'true' }));
  replicaPool = createPool(system.config.DATABASE_URL, system.log);
  replica = await buildGateway({ config: system.config, bus: system.bus, pool: replicaPool, log: system.log });
  await replica.listen({ port: 0, host: '127.0.0.1' });
  replicaUrl = `http://127.0.0.1:${(replica.server.address() as { port: number }).port}`;
}, 120_000);
afterAll(async () => {
  await replica?.close();
  await replicaPool?.end();
  await system?.stop();
});

async function seed(userId: string, subject: string, hits: number) {
  await system.pool.query(
    `INSERT INTO gateway.rate_limits (user_id, bucket, window_start, hits)
     SELECT $1, $2, w, $3 FROM unnest(ARRAY[date_trunc('minute', now()), date_trunc('minute', now()) + interval '1 minute']) AS w
     ON CONFLICT (user_id, bucket, window_start) DO UPDATE SET hits = EXCLUDED.hits`,
    [userId, subject, hits],
  );
}

const post = (base: string, path: string, authorization: string, body: unknown) =>
  fetch(`${base}${path}`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('per-user write rate limits', () => {
  it('RATE_LIMIT_WRITES=false turns them off (load tests)', async () => {
    const off = await buildGateway({ config: { ...system.config, RATE_LIMIT_WRITES: false }, bus: system.bus, pool: replicaPool, log: system.log });
    const dave = await createUserWithApiKey(system.pool);
    await seed(dave.userId, 'tasks.http.create', 1_000);
    const res = await off.inject({ method: 'POST', url: '/api/tasks', headers: { authorization: dave.authorization, host: 'localhost' }, payload: { title: 'unlimited' } });
    expect(res.statusCode).toBe(201);
    await off.close();
  });

  it('uses the reference limits, and 200 tasks a minute in bulk delete, changeTopic and setPriority actions', () => {
    expect(WRITE_LIMITS_PER_MINUTE).toMatchObject({ 'tasks.http.create': 60, 'tasks.http.complete': 30, 'tasks.http.snooze': 30, 'tasks.http.postpone': 10, 'tasks.http.topics.create': 30, [BULK_BUCKET]: 200 });
  });

  // issue 56, findings 1 and 11: a bulk complete of 60 tasks got past the 30-a-minute complete limit
  it('a bulk action counts each of its tasks against its action’s limit: past it, 429 and nothing changes; more than a minute allows, 422', async () => {
    const erin = await createUserWithApiKey(system.pool);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await post(system.url, '/api/tasks', erin.authorization, { title: `bulk ${i}` });
      expect(res.status).toBe(201);
      const created = (await res.json()) as { id?: string; task?: { id: string } };
      ids.push(created.task?.id ?? created.id!);
    }
    const bulk = (base: string, body: unknown) => fetch(`${base}/api/tasks/bulk`, { method: 'PATCH', headers: { authorization: erin.authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const completed = async () => Number((await system.pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks.tasks WHERE user_id = $1 AND completed_at IS NOT NULL', [erin.userId])).rows[0]!.n);
    await seed(erin.userId, 'tasks.http.complete', 25);
    // 25 + 6 > 30: refused whole, on either replica, and nothing is completed
    const refused = await bulk(replicaUrl, { action: 'complete', taskIds: ids, timezone: 'UTC' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { code: string; message: string }).message).toMatch(/at most 30 tasks per minute in bulk complete actions/);
    expect(await completed()).toBe(0);
    // more tasks than a whole minute allows can never pass: 422 naming the field, and it counts nothing
    const tooMany = await bulk(system.url, { action: 'complete', taskIds: Array.from({ length: 31 }, () => crypto.randomUUID()), timezone: 'UTC' });
    expect(tooMany.status).toBe(422);
    expect(await tooMany.json()).toMatchObject({ code: 'LIMIT_EXCEEDED', issues: [{ path: 'body.taskIds' }] });
    // with room for them they pass, and count: the 5 fill the minute's 30, so a single complete is refused next
    await seed(erin.userId, 'tasks.http.complete', 25);
    expect((await bulk(system.url, { action: 'complete', taskIds: ids.slice(0, 5), timezone: 'UTC' })).status).toBe(200);
    expect(await completed()).toBe(5);
    expect((await post(system.url, `/api/tasks/${ids[5]}/complete`, erin.authorization, {})).status).toBe(429);
  });

  it('bulk delete, changeTopic and setPriority share 200 tasks a minute', async () => {
    const frank = await createUserWithApiKey(system.pool);
    const some = (n: number) => Array.from({ length: n }, () => crypto.randomUUID());
    await seed(frank.userId, BULK_BUCKET, 0);
    const bulk = (body: unknown) => fetch(`${system.url}/api/tasks/bulk`, { method: 'PATCH', headers: { authorization: frank.authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await bulk({ action: 'setPriority', taskIds: some(150), priority: 'HIGH' })).status).toBe(200);
    expect((await bulk({ action: 'changeTopic', taskIds: some(50), topicId: null })).status).toBe(200);
    expect((await bulk({ action: 'delete', taskIds: some(1) })).status).toBe(429);
  });

  it('the 61st task in a minute is refused with 429 and Retry-After, across replicas; other users are unaffected', async () => {
    const alice = await createUserWithApiKey(system.pool);
    const bob = await createUserWithApiKey(system.pool);
    await seed(alice.userId, 'tasks.http.create', 59);
    // the 60th through one replica passes, the 61st through the other is refused
    expect((await post(system.url, '/api/tasks', alice.authorization, { title: 'sixtieth' })).status).toBe(201);
    const refused = await post(replicaUrl, '/api/tasks', alice.authorization, { title: 'sixty-first' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(120);
    expect(((await refused.json()) as { code: string }).code).toBe('RATE_LIMITED');
    const titles = (await system.pool.query<{ title: string }>('SELECT title FROM tasks.tasks WHERE user_id = $1', [alice.userId])).rows.map((r) => r.title);
    expect(titles).toEqual(['sixtieth']);
    expect((await post(replicaUrl, '/api/tasks', bob.authorization, { title: 'bob is fine' })).status).toBe(201);
  });

  it('topic creation has its own budget of 30', async () => {
    const carol = await createUserWithApiKey(system.pool);
    await seed(carol.userId, 'tasks.http.topics.create', 30);
    expect((await post(system.url, '/api/topics', carol.authorization, { title: 'one too many' })).status).toBe(429);
    expect((await post(system.url, '/api/tasks', carol.authorization, { title: 'tasks still fine' })).status).toBe(201);
  });
});

// issue 61, defect 2: an upsert and a commit per create nearly doubled its cost
describe('counting, cheaply and exactly', () => {
  /** the pool, counting the statements that touch the counters */
  function counting(pool: ReturnType<typeof createPool>): { q: Queryable; statements(): number } {
    let n = 0;
    const q = { query: (config: { text: string }, ...rest: unknown[]) => {
      if (/rate_limits/.test(config.text)) n++;
      return (pool.query as (...a: unknown[]) => unknown)(config, ...rest);
    } } as unknown as Queryable;
    return { q, statements: () => n };
  }

  it('calls that arrive together share one statement, and each sees the count as if it had run alone, in order', async () => {
    const [a, b] = [await createUserWithApiKey(system.pool), await createUserWithApiKey(system.pool)];
    const c = counting(system.pool);
    const calls = Array.from({ length: 100 }, (_, i) => ({ user: i % 3 === 0 ? b.userId : a.userId, bucket: i % 5 === 0 ? 'hour:test' : 'test', n: i % 7 === 0 ? 3 : 1 }));
    const results = await Promise.all(calls.map((x) => countCall(c.q, x.user, x.bucket, x.n)));
    expect(c.statements()).toBe(1);
    // each call's hits: the running total of its (user, bucket) in call order
    const running = new Map<string, number>();
    calls.forEach((x, i) => {
      const k = `${x.user} ${x.bucket}`;
      running.set(k, (running.get(k) ?? 0) + x.n);
      expect(results[i]!.hits, `call ${i}`).toBe(running.get(k));
      expect(results[i]!.resetIn).toBeGreaterThan(0);
      expect(results[i]!.resetIn).toBeLessThanOrEqual(x.bucket.startsWith('hour:') ? 3_600 : 60);
    });
    const stored = await system.pool.query<{ user_id: string; bucket: string; hits: number }>('SELECT user_id, bucket, sum(hits)::int AS hits FROM gateway.rate_limits WHERE user_id = ANY($1) GROUP BY 1, 2', [[a.userId, b.userId]]);
    expect(new Map(stored.rows.map((r) => [`${r.user_id} ${r.bucket}`, r.hits]))).toEqual(running);
  });

  it('two replicas counting the same user at once never hand out the same count', async () => {
    const a = await createUserWithApiKey(system.pool);
    const [one, two] = [counting(system.pool), counting(replicaPool)];
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => countCall(i % 2 ? one.q : two.q, a.userId, 'race', 1)));
    // a minute boundary may split them over two windows: the counts of each window are 1..its total, once each
    const byWindowTotal = (await system.pool.query<{ hits: number }>("SELECT hits FROM gateway.rate_limits WHERE user_id = $1 AND bucket = 'race' ORDER BY window_start", [a.userId])).rows.map((r) => r.hits);
    const expected = byWindowTotal.flatMap((t) => Array.from({ length: t }, (_, i) => i + 1)).sort((x, y) => x - y);
    expect(results.map((r) => r.hits).sort((x, y) => x - y)).toEqual(expected);
    expect(one.statements() + two.statements()).toBeLessThan(200);
  });

  it('a replica leases a few creates of a user at once and spends them without a statement; a burst through both replicas never passes more than the minute has left', async () => {
    const stored = async (userId: string) => (await system.pool.query<{ hits: number }>("SELECT hits FROM gateway.rate_limits WHERE user_id = $1 AND bucket = 'tasks.http.create' ORDER BY window_start", [userId])).rows.map((r) => r.hits);
    const bob = await createUserWithApiKey(system.pool);
    await seed(bob.userId, 'tasks.http.create', 0);
    expect((await post(system.url, '/api/tasks', bob.authorization, { title: 'first' })).status).toBe(201);
    const leased = (await stored(bob.userId))[0]!;
    expect(leased).toBe(10);
    for (let i = 1; i < 10; i++) expect((await post(system.url, '/api/tasks', bob.authorization, { title: `from the lease ${i}` })).status).toBe(201);
    // nine creates and not a statement (unless a minute boundary came between)
    expect((await stored(bob.userId)).reduce((a, b) => a + b, 0)).toBe(10);

    const alice = await createUserWithApiKey(system.pool);
    await seed(alice.userId, 'tasks.http.create', 20);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => post(i % 2 ? replicaUrl : system.url, '/api/tasks', alice.authorization, { title: `burst ${i}` }).then((r) => r.status)));
    expect(answers.every((s) => s === 201 || s === 429)).toBe(true);
    const created = answers.filter((s) => s === 201).length;
    const windows = (await stored(alice.userId)).filter((h) => h > 20);
    // each window was seeded with 20 of its 60: 40 at most in each (a minute boundary mid-burst splits the burst)
    expect(created).toBeLessThanOrEqual(40 * windows.length);
    // what one replica leased and did not spend is lost to the other: at most a lease's worth
    if (windows.length === 1) expect(created).toBeGreaterThanOrEqual(30);
    const tasks = Number((await system.pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks.tasks WHERE user_id = $1', [alice.userId])).rows[0]!.n);
    expect(tasks).toBe(created);
  });
});
