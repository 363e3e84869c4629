import { randomUUID } from 'node:crypto';
import { tasksApi, type Identity } from '@tasksvc/proto';
import { createMemoryBus, createPool, startService, type Pool, type PoolClient, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testSystemConfig } from '../../../tools/testenv/index.ts';
import { tasksService } from './service.ts';

/** Every SQL text the tasks service sends, through the pool or a client it checked out. */
function countingPool(pool: Pool, sent: string[]): Pool {
  const record = (text: unknown) => sent.push(typeof text === 'string' ? text : String((text as { text?: string }).text));
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

describe('task create: the request path', () => {
  const log = quietLogger();
  const bus = createMemoryBus(log);
  let pool: Pool;
  let tasks: RunningService;
  const sent: string[] = [];
  const user = (id: string): Identity => ({ id, email: `${id}@example.test`, method: 'api_key', readOnly: false, secondFactorOk: true, isAdmin: false });
  const call = <B>(id: string, body: B, params = {}) => ({ user: user(id), params, query: {}, body });

  beforeAll(async () => {
    const config = await testSystemConfig();
    pool = createPool(config.DATABASE_URL, log);
    tasks = await startService(tasksService, { config, bus, pool: countingPool(pool, sent), log });
  });
  afterAll(async () => {
    await tasks.stop();
    await bus.close();
    await pool.end();
  });

  it('is one transaction of at most four statements, with no scan for the sort order, also for a first-time user', async () => {
    for (const userId of [randomUUID(), randomUUID()]) {
      // first create (profile made on the way), then a later one
      for (let i = 0; i < 2; i++) {
        sent.length = 0;
        const { task } = await bus.request(tasksApi.create.rpc, call(userId, { title: `t${i}`, type: 'ONE_TIME', priority: 'NORMAL', coinValue: 1 } as never));
        // the request's own statements (the outbox relay runs beside it, outside the request)
        const own = sent.filter((q) => !/outbox|pg_advisory/.test(q) || /INSERT INTO tasks\.tasks/.test(q));
        expect(task.title).toBe(`t${i}`);
        expect(own.length, own.join('\n---\n')).toBeLessThanOrEqual(4);
        expect(own.filter((q) => /^\s*BEGIN/i.test(q))).toHaveLength(1);
        expect(own.join('\n')).not.toMatch(/MAX\s*\(\s*sort_order/i);
      }
    }
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
});
