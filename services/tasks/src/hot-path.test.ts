import { randomUUID } from 'node:crypto';
import { tasksApi, type Identity } from '@tasksvc/proto';
import { createMemoryBus, createPool, startService, type Pool, type PoolClient, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testSystemConfig } from '../../../tools/testenv/index.ts';
import { localDate } from '@tasksvc/proto/calendar/dates.ts';
import { listTasks } from './db/tasks.ts';
import { tasksService } from './service.ts';

/** Every SQL text the tasks service sends, through the pool or a client it checked out (and the values of the last one that had them). */
function countingPool(pool: Pool, sent: string[], last: { values?: unknown[] } = {}): Pool {
  const record = (text: unknown) => {
    if (typeof text !== 'string') last.values = (text as { values?: unknown[] }).values;
    sent.push(typeof text === 'string' ? text : String((text as { text?: string }).text));
  };
  const wrapClient = (c: PoolClient): PoolClient =>
    new Proxy(c, {
      get(target, prop, receiver) {
        if (prop === 'query') return (text: unknown, ...rest: unknown[]) => (record(text), (target.query as (...a: unknown[]) => unknown)(text, ...rest));
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query') return (text: unknown, ...rest: unknown[]) => (record(text), (target.query as (...a: unknown[]) => unknown)(text, ...rest));
      if (prop === 'connect') return async () => wrapClient(await target.connect());
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

describe('the request path of a task create and a list', () => {
  const log = quietLogger();
  const bus = createMemoryBus(log);
  let pool: Pool;
  let tasks: RunningService;
  const sent: string[] = [];
  const last: { values?: unknown[] } = {};
  const user = (id: string): Identity => ({ id, email: `${id}@example.test`, method: 'api_key', readOnly: false, secondFactorOk: true, isAdmin: false });
  const call = <B>(id: string, body: B, params = {}) => ({ user: user(id), params, query: {}, body });

  let databaseUrl: string;

  beforeAll(async () => {
    const config = await testSystemConfig();
    databaseUrl = config.DATABASE_URL;
    pool = createPool(config.DATABASE_URL, log);
    tasks = await startService(tasksService, { config, bus, pool: countingPool(pool, sent, last), log });
  });
  afterAll(async () => {
    await tasks.stop();
    await bus.close();
    await pool.end();
  });

  const own = () => sent.filter((q) => !/outbox|pg_(?:try_)?advisory/.test(q) || /INSERT INTO "?tasks"?\."?tasks"?/.test(q)); // the relay runs beside the request
  const createFor = (userId: string, body: Record<string, unknown>) =>
    bus.request(tasksApi.create.rpc, call(userId, { type: 'ONE_TIME', priority: 'NORMAL', coinValue: 1, ...body } as never));

  it('is one statement with no transaction around it and no scan for the sort order; a first-time user adds only the profile', async () => {
    const userId = randomUUID();
    sent.length = 0;
    expect((await createFor(userId, { title: 't0' })).task.title).toBe('t0');
    const first = own();
    // ensureProfile (select, insert, select) and the create itself
    expect(first.length, first.join('\n---\n')).toBeLessThanOrEqual(4);
    for (let i = 1; i < 3; i++) {
      sent.length = 0;
      expect((await createFor(userId, { title: `t${i}` })).task.title).toBe(`t${i}`);
      expect(own(), own().join('\n---\n')).toHaveLength(1);
    }
    for (const q of first) expect(q).not.toMatch(/^\s*(BEGIN|COMMIT)/i);
    expect(first.join('\n')).not.toMatch(/MAX\s*\(\s*sort_order/i);
    const { rows } = await pool.query<{ total_tasks_created: number }>('SELECT total_tasks_created FROM tasks.profiles WHERE user_id = $1', [userId]);
    expect(rows[0]!.total_tasks_created).toBe(3);
  });

  it("computes today in the profile's zone even when another replica changed it (the remembered zone is only a guess)", async () => {
    const userId = randomUUID();
    const daily = { title: 'stretch', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1 };
    await bus.request(tasksApi.setTimezone.rpc, call(userId, { timezone: 'Pacific/Kiritimati' }));
    expect((await createFor(userId, daily)).task.nextDueDate).toBe(localDate(new Date(), 'Pacific/Kiritimati'));
    // another replica (or a person in psql) moves the user 25 hours west: the local dates always differ
    await pool.query(`UPDATE tasks.profiles SET timezone = 'Pacific/Pago_Pago' WHERE user_id = $1`, [userId]);
    sent.length = 0;
    expect((await createFor(userId, daily)).task.nextDueDate).toBe(localDate(new Date(), 'Pacific/Pago_Pago'));
    expect(own(), "one statement refused on the stale zone, the profile's zone read, one retried with the right one").toHaveLength(3);
    const { rows } = await pool.query<{ n: string; created: number }>(
      'SELECT (SELECT count(*) FROM tasks.tasks WHERE user_id = $1) AS n, total_tasks_created AS created FROM tasks.profiles WHERE user_id = $1',
      [userId],
    );
    expect({ n: Number(rows[0]!.n), created: rows[0]!.created }, 'the refused attempt wrote nothing').toEqual({ n: 2, created: 2 });
  });

  it("a first create that names its own zone makes the profile and dates the task in the zone sent", async () => {
    const userId = randomUUID();
    const daily = { title: 'stretch', type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1, timezone: 'Pacific/Kiritimati' };
    expect((await createFor(userId, daily)).task.nextDueDate).toBe(localDate(new Date(), 'Pacific/Kiritimati'));
    const { rows } = await pool.query<{ created: number }>('SELECT total_tasks_created AS created FROM tasks.profiles WHERE user_id = $1', [userId]);
    expect(rows).toEqual([{ created: 1 }]);
  });

  it('a subtask create is one statement too (its parent checked and locked in it); the list of its parent one', async () => {
    const userId = randomUUID();
    const parent = (await createFor(userId, { title: 'parent' })).task;
    await createFor(userId, { title: 'warm-up', parentId: parent.id });
    sent.length = 0;
    const sub = (await createFor(userId, { title: 'sub', parentId: parent.id })).task;
    expect(sub.parentId).toBe(parent.id);
    expect(own(), own().join('\n---\n')).toHaveLength(1);
    sent.length = 0;
    const page = await bus.request(tasksApi.list.rpc, { ...call(userId, undefined), query: { parentId: parent.id, limit: 50, offset: 0 } } as never);
    expect(page.tasks.map((t) => t.title)).toEqual(['warm-up', 'sub']);
    expect(own(), own().join('\n---\n')).toHaveLength(1);
  });

  it("refuses a topic that is not the user's and writes nothing", async () => {
    const userId = randomUUID();
    await createFor(userId, { title: 'first' });
    await expect(createFor(userId, { title: 'x', topicId: randomUUID() })).rejects.toMatchObject({ code: 'TOPICS_NOT_FOUND' });
    const { rows } = await pool.query<{ created: number; next: number }>('SELECT total_tasks_created AS created, next_sort_order AS next FROM tasks.profiles WHERE user_id = $1', [userId]);
    expect(rows[0]).toEqual({ created: 1, next: 1 });
  });

  it("lists in one statement, in the profile's zone even when another replica changed it", async () => {
    const userId = randomUUID();
    await bus.request(tasksApi.setTimezone.rpc, call(userId, { timezone: 'Pacific/Kiritimati' }));
    const { task } = await createFor(userId, { title: 'wake up later' });
    // snoozed until today in Kiritimati, which is still tomorrow in Pago Pago (25 hours west)
    await pool.query('UPDATE tasks.tasks SET snoozed_until = $2 WHERE id = $1', [task.id, localDate(new Date(), 'Pacific/Kiritimati')]);
    const awake = async () => (await bus.request(tasksApi.list.rpc, { ...call(userId, undefined), query: { snoozed: false, limit: 50, offset: 0 } } as never)).tasks.map((t) => t.id);
    sent.length = 0;
    expect(await awake()).toEqual([task.id]);
    expect(own(), own().join('\n---\n')).toHaveLength(1);
    await pool.query(`UPDATE tasks.profiles SET timezone = 'Pacific/Pago_Pago' WHERE user_id = $1`, [userId]);
    sent.length = 0;
    expect(await awake(), 'still snoozed in the new zone').toEqual([]);
    expect(own(), 'one read in the stale zone, one in the right one').toHaveLength(2);
  });

  it("answers a list's total without counting the user's tasks, and the total stays right through creates and deletes", async () => {
    const userId = randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await createFor(userId, { title: `t${i}`, priority: i < 4 ? 'HIGH' : 'SOMEDAY' })).task.id);
    for (const id of ids.slice(0, 2)) await bus.request(tasksApi.remove.rpc, call(userId, undefined, { id }) as never);
    // a delete of a task that is gone (or another user's) must not count down
    await expect(bus.request(tasksApi.remove.rpc, call(userId, undefined, { id: ids[0] }) as never)).rejects.toMatchObject({ code: 'TASKS_NOT_FOUND' });
    await expect(bus.request(tasksApi.remove.rpc, call(randomUUID(), undefined, { id: ids[2] }) as never)).rejects.toMatchObject({ code: 'TASKS_NOT_FOUND' });
    const list = async (query: Record<string, unknown>) => {
      sent.length = 0;
      const r = await bus.request(tasksApi.list.rpc, { ...call(userId, undefined), query: { limit: 50, offset: 0, ...query } } as never);
      // did PostgreSQL count? The plan of the statement just run, with its values: a count that ran has loops
      const statement = own().at(-1)!;
      const plan = await pool.query<{ 'QUERY PLAN': unknown }>({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`, values: last.values });
      const nodes: { 'Node Type': string; 'Actual Loops': number; Plans?: unknown[] }[] = [];
      const walk = (n: (typeof nodes)[number]) => (nodes.push(n), (n.Plans ?? []).forEach((c) => walk(c as (typeof nodes)[number])));
      walk((plan.rows[0]!['QUERY PLAN'] as [{ Plan: (typeof nodes)[number] }])[0].Plan);
      const counted = nodes.some((n) => n['Node Type'] === 'Aggregate' && n['Actual Loops'] > 0);
      return { total: r.total, shown: r.tasks.length, counted };
    };
    // unfiltered: the profile's task count, a full page or not
    expect(await list({})).toEqual({ total: 5, shown: 5, counted: false });
    expect(await list({ limit: 2 })).toEqual({ total: 5, shown: 2, counted: false });
    expect(await list({ offset: 9 })).toEqual({ total: 5, shown: 0, counted: false });
    // filtered: a page that is not full ends the list (no count); a full or empty one is counted
    expect(await list({ priority: 'HIGH' })).toEqual({ total: 2, shown: 2, counted: false });
    expect(await list({ priority: 'SOMEDAY', offset: 1 })).toEqual({ total: 3, shown: 2, counted: false });
    expect(await list({ priority: 'SOMEDAY', limit: 2 })).toEqual({ total: 3, shown: 2, counted: true });
    expect(await list({ priority: 'SOMEDAY', offset: 3 })).toEqual({ total: 3, shown: 0, counted: true });
    const { rows } = await pool.query<{ kept: number; n: string }>('SELECT task_count AS kept, (SELECT count(*) FROM tasks.tasks WHERE user_id = $1) AS n FROM tasks.profiles WHERE user_id = $1', [userId]);
    expect({ kept: rows[0]!.kept, n: Number(rows[0]!.n) }).toEqual({ kept: 5, n: 5 });
  });

  it('puts a new task after every task of the list, also after a sort order set by hand', async () => {
    const userId = randomUUID();
    const create = async (title: string) => (await bus.request(tasksApi.create.rpc, call(userId, { title, type: 'ONE_TIME', priority: 'NORMAL', coinValue: 1 } as never))).task;
    const a = await create('a');
    const b = await create('b');
    expect(b.sortOrder).toBeGreaterThan(a.sortOrder);
    await bus.request(tasksApi.update.rpc, call(userId, { sortOrder: 500 }, { id: a.id }) as never);
    const c = await create('c');
    expect(c.sortOrder).toBeGreaterThan(500);
  });

  it('a complete of a task with no subtasks and no parent is four statements in its transaction, its answer as before', async () => {
    // the request's statements (its outbox row included), not the relay's beside it (outbox.ts)
    const relay = /pg_(?:try_)?advisory|^SELECT id, subject, payload|^UPDATE "[^"]+"\.outbox|^DELETE FROM "[^"]+"\.outbox|^SELECT 1 FROM "[^"]+"\.outbox|AS pending/;
    const request = () => sent.filter((q) => !relay.test(q.trim()));
    const userId = randomUUID();
    const completeFor = (id: string) => bus.request(tasksApi.complete.rpc, call(userId, {}, { id }) as never);
    const warm = (await createFor(userId, { title: 'warm-up', coinValue: 3 })).task;
    await completeFor(warm.id);
    for (const type of ['ONE_TIME', 'DAILY_ELIGIBLE'] as const) {
      const { task } = await createFor(userId, { title: `simple ${type}`, type, coinValue: 2 });
      const before = (await pool.query<{ coins: number }>('SELECT coins FROM tasks.profiles WHERE user_id = $1', [userId])).rows[0]!.coins;
      sent.length = 0;
      const done = await completeFor(task.id);
      const statements = request();
      expect({ completed: done.task.completedAt !== null, coinsEarned: done.coinsEarned, coins: done.coins }).toEqual({ completed: true, coinsEarned: 2, coins: before + 2 });
      // BEGIN, the caller's profile with the task (its family locked), the completion, the event and the quest, the streak and the achievements' figures, COMMIT
      expect(statements, statements.join('\n---\n')).toHaveLength(6);
      await expect(completeFor(task.id)).rejects.toMatchObject({ code: 'ALREADY_COMPLETED' });
    }
  });

  it('a complete of a RECURRING task with no subtasks is four statements in its transaction too, its answer as before', async () => {
    const relay = /pg_(?:try_)?advisory|^SELECT id, subject, payload|^UPDATE "[^"]+"\.outbox|^DELETE FROM "[^"]+"\.outbox|^SELECT 1 FROM "[^"]+"\.outbox|AS pending/;
    const request = () => sent.filter((q) => !relay.test(q.trim()));
    const userId = randomUUID();
    const completeFor = (id: string) => bus.request(tasksApi.complete.rpc, call(userId, {}, { id }) as never);
    const daily = { type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1 };
    const warm = (await createFor(userId, { title: 'warm-up', coinValue: 3, ...daily })).task;
    await completeFor(warm.id);
    const { task } = await createFor(userId, { title: 'stretch', coinValue: 2, ...daily });
    const before = (await pool.query<{ coins: number }>('SELECT coins FROM tasks.profiles WHERE user_id = $1', [userId])).rows[0]!.coins;
    sent.length = 0;
    const done = await completeFor(task.id);
    const statements = request();
    expect({ movedOn: done.task.nextDueDate! > task.nextDueDate!, completedAt: done.task.completedAt, coinsEarned: done.coinsEarned, coins: done.coins }).toEqual({
      movedOn: true,
      completedAt: null,
      coinsEarned: 2,
      coins: before + 2,
    });
    // BEGIN, the caller's profile with the task (its family locked), the completion (task moved on, completion, coins), the event and the quest, the streak and the achievements' figures, COMMIT
    expect(statements, statements.join('\n---\n')).toHaveLength(6);
    const { rows } = await pool.query<{ id: string; previous: string; coins: number }>(
      'SELECT id, previous_next_due_date::text AS previous, coins_awarded AS coins FROM tasks.task_completions WHERE task_id = $1',
      [task.id],
    );
    expect(rows).toEqual([{ id: done.completionId, previous: task.nextDueDate, coins: 2 }]);
  });

  it('an undo of a completion that did nothing beyond its own task is three statements in its transaction (ONE_TIME and RECURRING), its answer as before', async () => {
    const relay = /pg_(?:try_)?advisory|^SELECT id, subject, payload|^UPDATE "[^"]+"\.outbox|^DELETE FROM "[^"]+"\.outbox|^SELECT 1 FROM "[^"]+"\.outbox|AS pending/;
    const request = () => sent.filter((q) => !relay.test(q.trim()));
    const userId = randomUUID();
    const completeFor = (id: string) => bus.request(tasksApi.complete.rpc, call(userId, {}, { id }) as never);
    const undoFor = (id: string) => bus.request(tasksApi.undoComplete.rpc, call(userId, undefined, { id }) as never);
    const coins = async () => (await pool.query<{ coins: number; earned: number }>('SELECT coins, coins_earned AS earned FROM tasks.profiles WHERE user_id = $1', [userId])).rows[0]!;
    const warm = (await createFor(userId, { title: 'warm-up', coinValue: 3 })).task;
    await completeFor(warm.id);
    await undoFor(warm.id);
    const daily = { type: 'RECURRING', recurrenceType: 'INTERVAL', recurrenceInterval: 1 };
    for (const body of [{ type: 'ONE_TIME' }, { type: 'DAILY_ELIGIBLE' }, daily]) {
      const { task } = await createFor(userId, { title: `simple ${body.type}`, coinValue: 2, ...body });
      const before = await coins();
      await completeFor(task.id);
      sent.length = 0;
      const undone = await undoFor(task.id);
      const statements = request();
      expect({ completedAt: undone.task.completedAt, nextDueDate: undone.task.nextDueDate, coinsRemoved: undone.coinsRemoved, coins: undone.coins }).toEqual({
        completedAt: null,
        nextDueDate: task.nextDueDate,
        coinsRemoved: 2,
        coins: before.coins,
      });
      expect(await coins()).toEqual(before);
      // BEGIN, the caller's profile with the task (its family locked), the undo (completion, task, coins), the event and the quest, COMMIT
      expect(statements, statements.join('\n---\n')).toHaveLength(5);
      const { rows } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM tasks.task_completions WHERE task_id = $1', [task.id]);
      expect(Number(rows[0]!.n)).toBe(0);
      const events = await pool.query<{ due: string | null }>(
        `SELECT payload->'payload'->'task'->>'dueDate' AS due FROM tasks.outbox WHERE subject = 'events.task.updated' AND payload->'payload'->'task'->>'id' = $1`,
        [task.id],
      );
      expect(events.rows, 'one task.updated, of the task as the undo left it').toEqual([{ due: body.type === 'RECURRING' ? task.nextDueDate : null }]);
      await expect(undoFor(task.id)).rejects.toMatchObject({ code: 'CONFLICT' });
    }
  });

  it("dates a completion in the profile's zone even when another replica changed it (the remembered zone is only a guess)", async () => {
    const userId = randomUUID();
    const completeFor = (id: string) => bus.request(tasksApi.complete.rpc, call(userId, {}, { id }) as never);
    await bus.request(tasksApi.setTimezone.rpc, call(userId, { timezone: 'Pacific/Kiritimati' }));
    const first = (await createFor(userId, { title: 'first' })).task;
    const second = (await createFor(userId, { title: 'second' })).task;
    await completeFor(first.id);
    // another replica (or a person in psql) moves the user 25 hours west: the local dates always differ
    await pool.query(`UPDATE tasks.profiles SET timezone = 'Pacific/Pago_Pago' WHERE user_id = $1`, [userId]);
    await completeFor(second.id);
    const { rows } = await pool.query<{ task_id: string; local_date: string }>('SELECT task_id, local_date::text FROM tasks.task_completions WHERE user_id = $1', [userId]);
    const dates = Object.fromEntries(rows.map((r) => [r.task_id, r.local_date]));
    expect(dates).toEqual({ [first.id]: localDate(new Date(), 'Pacific/Kiritimati'), [second.id]: localDate(new Date(), 'Pacific/Pago_Pago') });
  });

  it("keeps one plan for a user's list however many tasks the user has (no planning at every run)", async () => {
    const userId = randomUUID();
    await bus.request(tasksApi.create.rpc, call(userId, { title: 'first', type: 'ONE_TIME', priority: 'NORMAL', coinValue: 1 } as never)); // the profile
    await pool.query(
      `INSERT INTO tasks.tasks (user_id, title, type, priority, sort_order) SELECT $1, 'task ' || i, 'ONE_TIME', 'NORMAL', i FROM generate_series(1, 5000) i`,
      [userId],
    );
    await pool.query('ANALYZE tasks.tasks');
    // a connection of its own: its prepared statements count only this test's runs
    const own = createPool(databaseUrl, log, { max: 1 });
    try {
      for (let i = 0; i < 12; i++) {
        const page = await listTasks(own, userId, { limit: 50, offset: 0 }, localDate(new Date(), 'UTC'));
        expect(page.rows).toHaveLength(50);
      }
      const { rows } = await own.query<{ generic_plans: string; custom_plans: string }>(
        `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%LEFT JOIN LATERAL%'`,
      );
      expect(rows, 'the unfiltered list is one prepared statement').toHaveLength(1);
      // PostgreSQL plans the first five runs for their values; from then on the generic plan, unless it looks dearer
      expect({ custom: Number(rows[0]!.custom_plans), generic: Number(rows[0]!.generic_plans) }).toEqual({ custom: 5, generic: 7 });
    } finally {
      await own.end();
    }
  });
});
