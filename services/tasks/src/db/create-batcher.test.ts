import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { createPool, migrate, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testDatabase } from '../../../../tools/testenv/index.ts';
import { tasksService } from '../service.ts';
import { CreateBatcher } from './create-batcher.ts';
import { ensureProfile } from './profiles.ts';
import type { CreateArgs } from './tasks.ts';

/** Creates written together by one statement (CreateBatcher → insertTasks), on a real PostgreSQL. */
describe('CreateBatcher', () => {
  const log = quietLogger();
  let pool: Pool;
  beforeAll(async () => {
    pool = createPool(await testDatabase(), log);
    await migrate(pool, { ...tasksService.migrations!, log });
  });
  afterAll(() => pool.end());

  /**
   * While `fn` runs, each statement of the pool whose text starts with `prefix` is shown to `watch`
   * (its parameters, a promise of its end, and its text) before it runs; resolves with `fn`'s result and their number.
   */
  async function watching<T>(prefix: string, fn: () => Promise<T>, watch: (values: unknown[], done: Promise<unknown>, text: string) => void = () => {}): Promise<{ result: T; statements: number }> {
    let statements = 0;
    const original = pool.query.bind(pool);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    (pool as any).query = (config: any, ...rest: any[]) => {
      const run = original(config, ...rest);
      if (String(config?.text).startsWith(prefix)) {
        statements++;
        watch(config.values, Promise.resolve(run).catch(() => undefined), config.text);
      }
      return run;
    };
    try {
      return { result: await fn(), statements };
    } finally {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      (pool as any).query = original;
    }
  }

  function create(userId: string, over: Partial<CreateArgs['cols']> = {}, zone: string | null = 'UTC'): CreateArgs {
    const id = randomUUID();
    return {
      userId,
      today: '2026-11-28',
      zone,
      cols: { id, title: `task ${id.slice(0, 4)}`, type: 'ONE_TIME', createdAt: new Date(), recurrenceWeekdays: null, ...over },
      outbox: { schema: 'tasks', row: { id: randomUUID(), subject: 'events.task.created', payload: JSON.stringify({ id }), traceparent: null } },
    };
  }

  async function users(n: number): Promise<string[]> {
    const ids = Array.from({ length: n }, () => randomUUID());
    for (const id of ids) await ensureProfile(pool, id);
    return ids;
  }

  const profileOf = async (userId: string) =>
    (await pool.query<{ next_sort_order: number; task_count: number; total_tasks_created: number }>('SELECT next_sort_order, task_count, total_tasks_created FROM tasks.profiles WHERE user_id = $1', [userId])).rows[0]!;
  const outboxIds = async (ids: string[]) => (await pool.query<{ id: string }>('SELECT id FROM tasks.outbox WHERE id = ANY($1)', [ids])).rows.map((r) => r.id).sort();

  it('writes creates that arrive together with one statement: each task, its list position, its count and its outbox row', async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1 });
    const ids = await users(6);
    // text as users type it: quotes, backslashes, braces, commas, emoji, a newline (the records go as one JSON text)
    const notes = (i: number) => (i === 0 ? null : `say "hi" \\ {a,b} 😀\n${i}`);
    const creates = ids.map((u, i) => create(u, { priority: i % 2 ? 'HIGH' : 'NORMAL', dueDate: '2026-12-0' + (i + 1), notes: notes(i) }));
    const { result, statements } = await watching('WITH i AS', () => Promise.all(creates.map((c) => batcher.insert(c))));
    expect(statements).toBe(1);
    for (const [i, r] of result.entries()) {
      expect(r.zone).toBe('UTC');
      expect(r.row).toMatchObject({ id: creates[i]!.cols.id, userId: ids[i], title: creates[i]!.cols.title, notes: notes(i), sortOrder: 0, dueDate: `2026-12-0${i + 1}`, priority: i % 2 ? 'HIGH' : 'NORMAL', blocked: false });
      expect(r.row!.createdAt.getTime()).toBe(creates[i]!.cols.createdAt.getTime());
    }
    const payloads = await pool.query<{ id: string; payload: unknown }>('SELECT id, payload FROM tasks.outbox WHERE id = ANY($1)', [creates.map((c) => c.outbox.row.id)]);
    for (const row of payloads.rows) expect(JSON.stringify(row.payload)).toBe(creates.find((c) => c.outbox.row.id === row.id)!.outbox.row.payload);
    for (const u of ids) expect(await profileOf(u)).toEqual({ next_sort_order: 1, task_count: 1, total_tasks_created: 1 });
    expect(await outboxIds(creates.map((c) => c.outbox.row.id))).toEqual(creates.map((c) => c.outbox.row.id).sort());
  });

  it("runs a batch's statement in the async context (the trace) of its first create", async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1, keepContext: true });
    const ids = await users(4);
    const request = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    await watching(
      'WITH',
      async () => {
        // two batches: the second starts from the first's completion, in no request's context of its own
        const first = ids.slice(0, 2).map((u, i) => request.run(`a${i}`, () => batcher.insert(create(u))));
        await new Promise((r) => setImmediate(r));
        const second = ids.slice(2).map((u, i) => request.run(`b${i}`, () => batcher.insert(create(u))));
        await Promise.all([...first, ...second]);
      },
      () => seen.push(request.getStore()),
    );
    expect(seen).toEqual(['a0', 'b0']);
  });

  it('gives two creates of one user distinct list positions (one per statement)', async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1 });
    const [u] = await users(1);
    const results = await Promise.all([1, 2, 3].map(() => batcher.insert(create(u!))));
    expect(results.map((r) => r.row!.sortOrder).sort()).toEqual([0, 1, 2]);
    expect(await profileOf(u!)).toEqual({ next_sort_order: 3, task_count: 3, total_tasks_created: 3 });
  });

  it('fails only the create that fails: the others of its batch are written', async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1 });
    const ids = await users(4);
    // a type the request schema would refuse, breaking the table's CHECK: the batch's statement fails as a whole
    const creates = ids.map((u, i) => create(u, i === 2 ? { type: 'BOGUS' as 'ONE_TIME' } : {}));
    const settled = await Promise.allSettled(creates.map((c) => batcher.insert(c)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((settled[2] as PromiseRejectedResult).reason)).toMatch(/tasks_type_check/);
    const written = (await pool.query<{ id: string }>('SELECT id FROM tasks.tasks WHERE user_id = ANY($1)', [ids])).rows.map((r) => r.id).sort();
    expect(written).toEqual([0, 1, 3].map((i) => creates[i]!.cols.id).sort());
    expect(await profileOf(ids[2]!)).toEqual({ next_sort_order: 0, task_count: 0, total_tasks_created: 0 });
    expect(await outboxIds([creates[2]!.outbox.row.id])).toEqual([]);
  });

  it("writes nothing for a create whose zone is not the profile's, or without a profile, and says which", async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1 });
    const [a, b] = await users(2);
    const stranger = randomUUID(); // no profile
    const [ok, moved, none] = await Promise.all([batcher.insert(create(a!)), batcher.insert(create(b!, {}, 'Europe/Berlin')), batcher.insert(create(stranger))]);
    expect(ok.row?.userId).toBe(a);
    expect(moved).toEqual({ row: null, zone: 'UTC' });
    expect(none).toEqual({ row: null, zone: null });
    expect(await profileOf(b!)).toEqual({ next_sort_order: 0, task_count: 0, total_tasks_created: 0 });
  });

  it('batches recurring creates with weekdays, and leaves creates in a topic to their own statement', async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1 });
    const ids = await users(3);
    const topicId = randomUUID();
    await pool.query(`INSERT INTO tasks.topics (id, user_id, title) VALUES ($1, $2, 'T')`, [topicId, ids[2]]);
    const weekly = (u: string) =>
      create(u, { type: 'RECURRING', recurrenceType: 'WEEKDAY', recurrenceWeekdays: [0, 4], recurrenceInterval: 1, recurrenceAnchor: '2026-11-30', nextDueDate: '2026-11-30', dueDate: '2026-11-30' });
    const { result, statements } = await watching('WITH', () => Promise.all([batcher.insert(weekly(ids[0]!)), batcher.insert(weekly(ids[1]!)), batcher.insert(create(ids[2]!, { topicId }))]));
    expect(statements).toBe(2); // the two weekly ones together, the topic's alone
    expect(result.map((r) => r.row?.recurrenceWeekdays ?? r.row?.topicId)).toEqual([[0, 4], [0, 4], topicId]);
  });

  it("finds a batch's profiles by their key, not by reading every profile (the generic plan, on an analysed table of hundreds)", async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 1 });
    await pool.query(`INSERT INTO tasks.profiles (user_id) SELECT gen_random_uuid() FROM generate_series(1, 500)`);
    await pool.query('ANALYZE tasks.profiles');
    const ids = await users(4);
    let seen: { text: string; values: unknown[] } | undefined;
    await watching(
      'WITH i AS',
      () => Promise.all(ids.map((u) => batcher.insert(create(u)))),
      (values, _done, text) => (seen = { text, values }),
    );
    const client = await pool.connect();
    try {
      // the plan a prepared statement keeps after its first five runs: the parameters unknown, the unnest guessed at 10 rows
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE batch_plan AS ${seen!.text}`);
      // EXPLAIN EXECUTE takes no parameters: the values as literals, quoted by PostgreSQL
      const args = (await client.query<{ args: string }>(`SELECT concat_ws(', ', ${seen!.values.map((_, i) => `quote_nullable($${i + 1}::text)`).join(', ')}) AS args`, seen!.values)).rows[0]!.args;
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE batch_plan(${args})`);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Update on profiles/);
      expect(plan).not.toMatch(/Seq Scan on profiles/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('answers every one of many concurrent creates, each user counting each of its tasks once, no user in two running batches', async () => {
    const batcher = new CreateBatcher(pool, { maxInFlight: 4, maxBatch: 8 });
    const ids = await users(20);
    // the users of the batch statements running at each moment: two holding one user could deadlock
    const running = new Set<string[]>();
    let shared = 0;
    const creates = Array.from({ length: 400 }, (_, i) => create(ids[i % ids.length]!));
    const { result, statements } = await watching(
      'WITH i AS',
      () => Promise.all(creates.map((c) => batcher.insert(c))),
      (values, done) => {
        const mine = values.find(Array.isArray) as string[]; // the batch's users
        for (const other of running) if (other.some((u) => mine.includes(u))) shared++;
        running.add(mine);
        void done.then(() => running.delete(mine));
      },
    );
    expect(result.every((r) => r.row !== null)).toBe(true);
    expect(statements).toBeGreaterThanOrEqual(50); // 400 creates, up to 8 per statement
    expect(statements).toBeLessThan(100);
    expect(shared).toBe(0);
    for (const u of ids) {
      const orders = result.filter((r) => r.row!.userId === u).map((r) => r.row!.sortOrder);
      expect(orders.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(await profileOf(u)).toEqual({ next_sort_order: 20, task_count: 20, total_tasks_created: 20 });
    }
  });
});
