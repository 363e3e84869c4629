import { randomUUID } from 'node:crypto';
import { AppError, defineEvent, defineRpc } from '@tasksvc/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { quietLogger, sharedNatsUrl, testDatabase, until } from '../../../../tools/testenv/index.ts';
import { createPool, inTransaction } from '../db/pool.ts';
import { createDeadLetters, deadLetterTableSql } from '../dead-letters.ts';
import { registry } from '../metrics.ts';
import { enqueueEvent, OUTBOX_RETENTION_DAYS, outboxTableSql, startOutboxRelay } from '../outbox.ts';
import { createMemoryBus } from './memory.ts';
import { createNatsBus } from './nats.ts';
import type { Bus } from './types.ts';

const log = quietLogger();
const uid = () => randomUUID().slice(0, 8);

const makeRpc = () =>
  defineRpc(`test${uid()}.add`, z.object({ a: z.number(), b: z.number() }).strict(), z.object({ sum: z.number() }));
/** A counter's value in this process's registry, for one set of labels (summed over the rest). */
async function counterValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
}
const makeEvent = () => defineEvent(`events.test${uid()}.happened`, z.object({ n: z.number() }));


// The same contract, run against both transports.
describe.each([
  ['in-process', async (): Promise<Bus[]> => {
    const bus = createMemoryBus(log);
    return [bus, bus];
  }],
  ['NATS', async (): Promise<Bus[]> => Promise.all([createNatsBus({ servers: sharedNatsUrl(), name: 'a', log }), createNatsBus({ servers: sharedNatsUrl(), name: 'b', log })])],
])('bus contract over %s', (_name, make) => {
  // `server` and `client` are separate connections over NATS, the same bus in-process.
  let server: Bus;
  let client: Bus;
  beforeAll(async () => {
    [server, client] = (await make()) as [Bus, Bus];
  });
  afterAll(async () => {
    await server.close();
    if (client !== server) await client.close();
  });

  it('answers a request with a reply checked against its schema', async () => {
    const rpc = makeRpc();
    server.serve(rpc, async ({ a, b }) => ({ sum: a + b }));
    await Promise.all([server.flush(), client.flush()]);
    await expect(client.request(rpc, { a: 2, b: 3 })).resolves.toEqual({ sum: 5 });
  });

  it('refuses a bad request on the caller side, naming the field', async () => {
    const rpc = makeRpc();
    let called = false;
    server.serve(rpc, async () => {
      called = true;
      return { sum: 0 };
    });
    await Promise.all([server.flush(), client.flush()]);
    const err = await client.request(rpc, { a: 'x', b: 1 } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('VALIDATION_FAILED');
    expect((err as AppError).issues?.[0]?.path).toBe('a');
    expect(called).toBe(false);
  });

  it('refuses a bad request on the server side too (a caller without the schema)', async () => {
    const rpc = makeRpc();
    server.serve(rpc, async () => ({ sum: 0 }));
    await Promise.all([server.flush(), client.flush()]);
    const lax = defineRpc(rpc.subject, z.any(), rpc.reply);
    const err = await client.request(lax, { a: 1, b: 'two' }).catch((e: unknown) => e);
    expect((err as AppError).code).toBe('VALIDATION_FAILED');
    expect((err as AppError).issues?.[0]?.path).toBe('b');
  });

  it('reads requests and replies of another release tolerantly: unknown keys ignored, keys left out take their defaults', async () => {
    const subject = `test${uid()}.describe`;
    // release 2 added `unit` to the request and `rounded` to the reply; release 1 knows neither
    const v1 = defineRpc(subject, z.object({ a: z.number() }).strict(), z.object({ text: z.string() }).strict());
    const v2 = defineRpc(subject, z.object({ a: z.number(), unit: z.string().nullable() }).strict(), z.object({ text: z.string(), rounded: z.number().nullable() }).strict());
    // a new server answers an old caller (the caller left `unit` out; it ignores `rounded`)
    const seen: unknown[] = [];
    const s2 = server.serve(v2, async (req) => (seen.push(req), { text: `${req.a}${req.unit ?? ''}`, rounded: Math.round(req.a) }));
    await Promise.all([server.flush(), client.flush()]);
    await expect(client.request(v1, { a: 1.5 })).resolves.toEqual({ text: '1.5' });
    expect(seen).toEqual([{ a: 1.5, unit: null }]);
    await s2.stop();
    // an old server answers a new caller (it ignores `unit`; the caller reads `rounded` as null)
    server.serve(v1, async (req) => ({ text: String(req.a) }));
    await Promise.all([server.flush(), client.flush()]);
    await expect(client.request(v2, { a: 2, unit: 'kg' })).resolves.toEqual({ text: '2', rounded: null });
  });

  it('reports a reply this release cannot read as an internal error naming the field, never as the caller’s 400', async () => {
    const subject = `test${uid()}.count`;
    const answering = defineRpc(subject, z.object({}), z.object({ n: z.string() }));
    const asking = defineRpc(subject, z.object({}), z.object({ n: z.number() }));
    server.serve(answering, async () => ({ n: 'many' }));
    await Promise.all([server.flush(), client.flush()]);
    const err = (await client.request(asking, {}).catch((e: unknown) => e)) as AppError;
    expect(err.code).toBe('INTERNAL');
    expect(err.message).toMatch(new RegExp(`reply of ${subject.replace('.', '\\.')} does not match this release's contract.*n: `));
  });

  it('passes a handler AppError through with its code; hides unexpected errors', async () => {
    const rpc = makeRpc();
    server.serve(rpc, async ({ a }) => {
      if (a === 1) throw new AppError('TASKS_NOT_FOUND', 'no such task');
      if (a === 2) throw new Error('secret internals: password=hunter2');
      if (a === 3) return { sum: 'not a number' } as never;
      if (a === 4) throw new AppError('RATE_LIMITED', 'wait', undefined, { retryAfterSeconds: 42 });
      return { sum: a };
    });
    await Promise.all([server.flush(), client.flush()]);
    await expect(client.request(rpc, { a: 1, b: 0 })).rejects.toMatchObject({ code: 'TASKS_NOT_FOUND', message: 'no such task', retryAfterSeconds: undefined });
    // a limit's wait crosses the bus (the gateway sends it as Retry-After)
    await expect(client.request(rpc, { a: 4, b: 0 })).rejects.toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 42 });
    const internal = (await client.request(rpc, { a: 2, b: 0 }).catch((e: unknown) => e)) as AppError;
    expect(internal.code).toBe('INTERNAL');
    expect(internal.message).not.toContain('hunter2');
    await expect(client.request(rpc, { a: 3, b: 0 })).rejects.toMatchObject({ code: 'INTERNAL' });
  });

  it('hands a reply on as JSON text (requestJson): the data the handler’s schema made, errors as AppErrors', async () => {
    // the reply schema strips what the contract does not name: the text is of the checked reply
    const rpc = defineRpc(`test${uid()}.page`, z.object({ a: z.number() }), z.object({ items: z.array(z.object({ id: z.string(), at: z.string() })), total: z.number() }));
    server.serve(rpc, async ({ a }) => {
      if (a === 1) throw new AppError('TASKS_NOT_FOUND', 'no such page');
      if (a === 2) return { items: [{ id: 7 }], total: 1 } as never;
      return { items: [{ id: 'x"y ✓ zoë', at: '2026-12-01T00:00:00.000Z', secret: 's' }], total: 1, internal: true } as never;
    });
    await Promise.all([server.flush(), client.flush()]);
    // text in-process, the reply's own bytes over NATS
    const json = await client.requestJson(rpc, { a: 0 });
    const text = typeof json === 'string' ? json : Buffer.from(json).toString();
    expect(text).toBe('{"items":[{"id":"x\\"y ✓ zoë","at":"2026-12-01T00:00:00.000Z"}],"total":1}');
    expect(JSON.parse(text)).toEqual(await client.request(rpc, { a: 0 }));
    await expect(client.requestJson(rpc, { a: 1 })).rejects.toMatchObject({ code: 'TASKS_NOT_FOUND', message: 'no such page' });
    // a reply that breaks its schema is the server's bug: INTERNAL, as for request()
    await expect(client.requestJson(rpc, { a: 2 })).rejects.toMatchObject({ code: 'INTERNAL' });
    await expect(client.requestJson(rpc, { a: 'x' } as never)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('reports a missing service as SERVICE_UNAVAILABLE and a slow one as TIMEOUT', async () => {
    await expect(client.request(makeRpc(), { a: 1, b: 1 }, { timeoutMs: 2_000 })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    const slow = makeRpc();
    server.serve(slow, async () => {
      await new Promise((r) => setTimeout(r, 1_500));
      return { sum: 0 };
    });
    await Promise.all([server.flush(), client.flush()]);
    await expect(client.request(slow, { a: 1, b: 1 }, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('carries the request id to the handler', async () => {
    const rpc = makeRpc();
    let seen = '';
    server.serve(rpc, async (_p, ctx) => {
      seen = ctx.requestId;
      return { sum: 0 };
    });
    await Promise.all([server.flush(), client.flush()]);
    await client.request(rpc, { a: 0, b: 0 }, { requestId: 'req-123' });
    expect(seen).toBe('req-123');
  });

  it('spreads requests over the replicas of one service (queue group)', async () => {
    const rpc = makeRpc();
    const hits = [0, 0];
    server.serve(rpc, async () => ({ sum: ++hits[0]! }));
    client.serve(rpc, async () => ({ sum: ++hits[1]! }));
    await Promise.all([server.flush(), client.flush()]);
    for (let i = 0; i < 40; i++) await client.request(rpc, { a: 0, b: 0 });
    expect(hits[0]! + hits[1]!).toBe(40);
    expect(hits[0]).toBeGreaterThan(0);
    expect(hits[1]).toBeGreaterThan(0);
  });

  it('delivers a durable event once to each consumer group, sharing work within a group, dropping duplicate ids', async () => {
    const ev = makeEvent();
    const groupA: string[] = [];
    const groupB1: string[] = [];
    const groupB2: string[] = [];
    const a = await server.consume(ev, async (_p, m) => void groupA.push(m.msgId), { durable: `a${uid()}` });
    const durableB = `b${uid()}`;
    const b1 = await server.consume(ev, async (_p, m) => void groupB1.push(m.msgId), { durable: durableB });
    const b2 = await client.consume(ev, async (_p, m) => void groupB2.push(m.msgId), { durable: durableB });
    const ids = Array.from({ length: 30 }, () => randomUUID());
    for (const [i, id] of ids.entries()) await client.publish(ev, { n: i }, id);
    await client.publish(ev, { n: 0 }, ids[0]!); // duplicate id: dropped
    await until(() => groupA.length >= 30 && groupB1.length + groupB2.length >= 30, 'every event in both groups', 15_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(groupA.sort()).toEqual([...ids].sort());
    expect([...groupB1, ...groupB2].sort()).toEqual([...ids].sort());
    await Promise.all([a.stop(), b1.stop(), b2.stop()]);
  });

  it('rejects an event that breaks its schema before it is stored', async () => {
    const ev = makeEvent();
    await expect(client.publish(ev, { n: 'x' } as never, randomUUID())).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('rejects an event that breaks its schema while a consumer waits for it, which never sees it', async () => {
    const ev = makeEvent();
    const seen: unknown[] = [];
    const sub = await server.consume(ev, async (msg) => void seen.push(msg), { durable: `bad-${randomUUID().slice(0, 8)}` });
    await server.flush();
    await expect(client.publish(ev, { n: 'x' } as never, randomUUID())).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
    await client.publish(ev, { n: 1 }, randomUUID());
    await until(() => seen.length > 0, 'the good event');
    expect(seen).toEqual([{ n: 1 }]);
    await sub.stop();
  });

  describe('with the transactional outbox', () => {
    let pool: pg.Pool;
    let databaseUrl: string;
    beforeAll(async () => {
      databaseUrl = await testDatabase();
      pool = createPool(databaseUrl, log);
      await pool.query(outboxTableSql('box'));
    });
    afterAll(async () => {
      await pool.end();
    });

    it('parks an event its consumer cannot read (never drops it), counts it, and replays it once the consumer can read it', async () => {
      const subject = `events.test${uid()}.moved`;
      // release 1 of the contract knows two kinds; release 2 added `kind: "c"` and an optional note
      const v1 = defineEvent(subject, z.object({ n: z.number(), kind: z.enum(['a', 'b']) }).strict());
      const v2 = defineEvent(subject, z.object({ n: z.number(), kind: z.enum(['a', 'b', 'c']), note: z.string().nullable() }).strict());
      const schema = `dl_${uid()}`;
      await pool.query(`CREATE SCHEMA ${schema}; ${deadLetterTableSql(schema)}`);
      const durable = `park${uid()}`;
      const parkedBefore = await counterValue('tasksvc_bus_events_parked_total', { durable });
      // the old consumer: reads what a new producer sends where it can (the unknown note ignored), parks the rest
      const old = createDeadLetters({ pool, schema, service: 'webhook', log });
      const handledByOld: unknown[] = [];
      const sub = await old.bus(server).consume(v1, async (p) => void handledByOld.push(p), { durable });
      await server.flush();
      const unreadable = randomUUID();
      await client.publish(v2, { n: 1, kind: 'a', note: 'new key' }, randomUUID());
      await client.publish(v2, { n: 2, kind: 'c', note: null }, unreadable);
      await client.publish(v2, { n: 3, kind: 'b', note: null }, randomUUID());
      await until(() => handledByOld.length >= 2, 'the readable events', 15_000);
      await until(async () => (await old.list()).total === 1, 'the unreadable event parked', 15_000);
      expect(handledByOld).toEqual([
        { n: 1, kind: 'a' },
        { n: 3, kind: 'b' },
      ]);
      const listed = await old.list();
      expect(listed.events[0]).toMatchObject({ durable, subject, msgId: unreadable, attempts: 1 });
      expect(listed.events[0]!.error).toMatch(/^kind: /);
      expect(await counterValue('tasksvc_bus_events_parked_total', { durable })).toBe(parkedBefore + 1);
      // replaying to a consumer that still cannot read it keeps it, saying why
      const still = await old.replay();
      expect(still).toMatchObject({ replayed: 0, stillParked: [{ error: expect.stringMatching(/^kind: /) }] });
      await sub.stop();
      old.close();
      // the upgraded consumer reads it (and an old producer's event without the note, as null)
      const upgraded = createDeadLetters({ pool, schema, service: 'webhook', log });
      const handledByNew: unknown[] = [];
      const sub2 = await upgraded.bus(server).consume(v2, async (p, meta) => void handledByNew.push({ ...p, id: meta.msgId }), { durable });
      await server.flush();
      await client.publish(v1, { n: 4, kind: 'a' }, randomUUID());
      await until(() => handledByNew.length >= 1, 'the old producer’s event', 15_000);
      expect(await upgraded.replay()).toEqual({ service: 'webhook', replayed: 1, stillParked: [] });
      expect(handledByNew).toEqual([
        { n: 4, kind: 'a', note: null, id: expect.any(String) },
        { n: 2, kind: 'c', note: null, id: unreadable },
      ]);
      expect((await upgraded.list()).total).toBe(0);
      await sub2.stop();
      upgraded.close();
    });

    it('delivers every committed event at least once although the consumer fails at first, and nothing from a rolled-back transaction', async () => {
      const ev = makeEvent();
      const handled = new Map<number, number>();
      let failuresLeft = 3;
      const sub = await server.consume(
        ev,
        async (p) => {
          if (failuresLeft-- > 0) throw new Error('transient');
          handled.set(p.n, (handled.get(p.n) ?? 0) + 1);
        },
        { durable: `o${uid()}` },
      );
      const relay = startOutboxRelay({ pool, bus: client, schema: 'box', events: [ev], log, pollMs: 50 });
      const c = await pool.connect();
      await c.query('BEGIN');
      await enqueueEvent(c, 'box', ev, { n: 999 });
      await c.query('ROLLBACK');
      c.release();
      for (let n = 0; n < 20; n++) await enqueueEvent(pool, 'box', ev, { n });
      relay.kick();
      await until(() => handled.size >= 20, 'all 20 outbox events handled', 30_000);
      await new Promise((r) => setTimeout(r, 300));
      expect([...handled.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(handled.has(999)).toBe(false);
      const { rows } = await pool.query(`SELECT count(*)::int AS pending FROM box.outbox WHERE published_at IS NULL AND subject = $1`, [ev.subject]);
      expect(rows[0].pending).toBe(0);
      await relay.stop();
      await sub.stop();
    });

    it('prunes published rows after the retention, in every outbox alike, and never a pending one', async () => {
      const ev = defineEvent('events.test.prune', z.object({ n: z.number() }));
      const relay = startOutboxRelay({ pool, bus: client, schema: 'box', events: [ev], log, pollMs: 60_000 });
      try {
        const row = (age: string, published: boolean) =>
          pool.query<{ id: string }>(`INSERT INTO box.outbox (id, subject, payload, created_at, published_at) VALUES (gen_random_uuid(), $1, '{"n":1}', now() - $2::interval, ${published ? 'now() - $2::interval' : 'NULL'}) RETURNING id`, [ev.subject, age]);
        const old = (await row(`${OUTBOX_RETENTION_DAYS + 1} days`, true)).rows[0]!.id;
        const recent = (await row(`${OUTBOX_RETENTION_DAYS - 1} days`, true)).rows[0]!.id;
        const stuck = (await row(`${OUTBOX_RETENTION_DAYS + 30} days`, false)).rows[0]!.id;
        expect(await relay.prune()).toBeGreaterThanOrEqual(1);
        const { rows } = await pool.query<{ id: string }>('SELECT id FROM box.outbox WHERE id = ANY($1::uuid[])', [[old, recent, stuck]]);
        expect(rows.map((r) => r.id).sort()).toEqual([recent, stuck].sort());
      } finally {
        await relay.stop();
        await pool.query('DELETE FROM box.outbox WHERE subject = $1', [ev.subject]);
      }
    });

    /**
     * A consumer of a new event and a relay of it whose rounds are counted (each takes one connection
     * of its own pool), with no poll and a gap no test waits out: a round that starts is one a kick
     * (or flush) started.
     */
    async function countedRelay(durable: string) {
      const ev = makeEvent();
      const handled: number[] = [];
      const sub = await server.consume(ev, async (p) => void handled.push(p.n), { durable });
      const relayPool = createPool(databaseUrl, log);
      const counted = { rounds: 0 };
      const connect = relayPool.connect.bind(relayPool);
      relayPool.connect = (() => (counted.rounds++, connect())) as typeof relayPool.connect;
      const relay = startOutboxRelay({ pool: relayPool, bus: client, schema: 'box', events: [ev], log, pollMs: 600_000, minRoundGapMs: 600_000 });
      const stop = async () => {
        await relay.stop();
        await relayPool.end();
        await sub.stop();
      };
      return { ev, handled, counted, relay, stop };
    }

    it('publishes a kick after a quiet moment at once, and kicks that come while rounds are recent in one later round', async () => {
      const { ev, handled, counted, relay, stop } = await countedRelay(`g${uid()}`);
      try {
        await enqueueEvent(pool, 'box', ev, { n: 0 });
        relay.kick();
        await until(() => handled.length === 1, 'the first event, published at once', 30_000);
        await relay.flush(); // the first round is over; this one (flush starts at once) finds nothing
        counted.rounds = 0;
        for (let n = 1; n <= 10; n++) {
          await enqueueEvent(pool, 'box', ev, { n });
          relay.kick(); // a round began moments ago: wait
        }
        expect(await relay.flush()).toBe(10);
        expect(counted.rounds, 'the ten kicks started no round of their own').toBe(1);
        // flush returns once the stream stored them; over NATS the consumer gets them after that
        await until(() => handled.length === 11, 'the ten events handled', 30_000);
        expect(handled.sort((a, b) => a - b)).toEqual(Array.from({ length: 11 }, (_, i) => i));
      } finally {
        await stop();
      }
    });

    // No poll (an hour) and no kick by the writer: the commit of a transaction that wrote an outbox
    // row kicks this process's relay of that schema; a rolled-back one publishes nothing.
    it('publishes an event as its transaction commits, with no kick and no poll', async () => {
      const ev = makeEvent();
      const handled: number[] = [];
      const sub = await server.consume(ev, async (p) => void handled.push(p.n), { durable: `k${uid()}` });
      const relay = startOutboxRelay({ pool, bus: client, schema: 'box', events: [ev], log, pollMs: 3_600_000 });
      try {
        await relay.flush(); // the start-up round is over
        await inTransaction(pool, (c) => enqueueEvent(c, 'box', ev, { n: 1 }));
        await inTransaction(pool, async (c) => {
          await enqueueEvent(c, 'box', ev, { n: 2 });
          throw new Error('rolled back');
        }).catch(() => undefined);
        await until(() => handled.length === 1, 'the committed event, published', 30_000);
        expect(handled).toEqual([1]);
      } finally {
        await relay.stop();
        await sub.stop();
      }
    });

    // Every commit that wrote an outbox row kicks the relay (afterCommit): a burst of creates under
    // load must still cost one claim per round, not one per commit (the relay's 4 statements each).
    it('a burst of commits while a round is recent costs one round, not one per commit', async () => {
      const { ev, handled, counted, relay, stop } = await countedRelay(`b${uid()}`);
      try {
        await relay.flush(); // a round has just begun: every kick from here waits for the gap
        counted.rounds = 0;
        await Promise.all(Array.from({ length: 20 }, (_, n) => inTransaction(pool, (c) => enqueueEvent(c, 'box', ev, { n }))));
        expect(counted.rounds, 'the 20 commits started no round of their own').toBe(0);
        expect(await relay.flush()).toBe(20);
        expect(counted.rounds).toBe(1);
        await until(() => handled.length === 20, 'the 20 events', 30_000);
      } finally {
        await stop();
      }
    });

    // Two replicas' relays on one outbox (issue 58): each replica's commits kick its own relay. While one
    // relay is publishing (a round with rows and the gap after it, the lock kept), a kick of the other
    // runs no round of its own; the busy relay's next round takes its rows, and once that one lets go the
    // other's retry publishes. With the lock let go after every round, the other's kick ran a round at
    // once: two replicas ran twice the rounds of one.
    it('two relays on one outbox: a kick while the other is publishing runs no round, and is retried once it lets go', async () => {
      const ev = makeEvent();
      const handled: number[] = [];
      const sub = await server.consume(ev, async (p) => void handled.push(p.n), { durable: `r${uid()}` });
      /** a replica's relay with its own pool; its rounds (the outbox read) and lock tries answered are counted */
      const replica = (minRoundGapMs: number) => {
        const relayPool = createPool(databaseUrl, log);
        const counted = { rounds: 0, triesAnswered: 0 };
        const connect = relayPool.connect.bind(relayPool);
        const wrapped = new WeakSet<object>();
        relayPool.connect = (async () => {
          const c = await connect();
          if (!wrapped.has(c)) {
            wrapped.add(c);
            const query = c.query.bind(c) as (...args: unknown[]) => Promise<unknown>;
            c.query = ((...args: unknown[]) => {
              const text = typeof args[0] === 'string' ? args[0] : '';
              if (text.startsWith('SELECT id, subject')) counted.rounds++;
              const result = query(...args);
              if (text.includes('pg_try_advisory_lock')) void result.then(() => counted.triesAnswered++);
              return result;
            }) as typeof c.query;
          }
          return c;
        }) as typeof relayPool.connect;
        const relay = startOutboxRelay({ pool: relayPool, bus: client, schema: 'box', events: [ev], log, pollMs: 600_000, minRoundGapMs });
        let ended: Promise<void> | undefined;
        const end = () => (ended ??= relay.stop().then(() => relayPool.end()));
        return { relay, counted, end };
      };
      // a keeps the lock a gap no test waits out; b retries every 20 ms
      const [a, b] = [replica(600_000), replica(20)];
      // written without a kick: which relay is kicked is the test's choice
      const insert = (n: number) => pool.query('INSERT INTO box.outbox (id, subject, payload) VALUES (gen_random_uuid(), $1, $2)', [ev.subject, JSON.stringify({ n })]);
      try {
        await b.relay.flush(); // b's start-up round is over
        b.counted.rounds = 0;
        await insert(0);
        expect(await a.relay.flush(), 'a publishes the first row').toBe(1);
        for (let n = 1; n <= 10; n++) {
          await insert(n);
          b.relay.kick();
        }
        await until(() => b.counted.triesAnswered >= 2 || b.counted.rounds > 0, "b's kick answered");
        expect(b.counted.rounds, 'b ran no round while a was publishing').toBe(0);
        expect(await a.relay.flush(), "a's next round takes b's rows").toBe(10);
        await insert(11);
        b.relay.kick();
        await a.end(); // a lets go: b's retry takes the lock
        await until(() => handled.length >= 12, 'every event, the last by b', 30_000);
        expect(b.counted.rounds).toBeGreaterThan(0);
        expect(handled.sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i));
      } finally {
        await a.end();
        await b.end();
        await sub.stop();
      }
    });

    // The fallback the idle poll is kept for: a row committed by a replica that died before its round
    // (written here with plain SQL, so nothing in this process kicks the relay) is published by this
    // relay at its next idle poll, IDLE_POLL_MS (15 s) in production, 200 ms here.
    it('publishes a row no kick announced at its idle poll', async () => {
      const ev = makeEvent();
      const handled: number[] = [];
      const sub = await server.consume(ev, async (p) => void handled.push(p.n), { durable: `i${uid()}` });
      const relay = startOutboxRelay({ pool, bus: client, schema: 'box', events: [ev], log, pollMs: 50, idlePollMs: 200 });
      try {
        await relay.flush(); // the start-up round is over: nothing waits, so the relay polls every 200 ms
        await pool.query(`INSERT INTO box.outbox (id, subject, payload) VALUES (gen_random_uuid(), $1, $2)`, [ev.subject, JSON.stringify({ n: 7 })]);
        await until(() => handled.length === 1, 'the unannounced row, published by the idle poll', 30_000);
        expect(handled).toEqual([7]);
      } finally {
        await relay.stop();
        await sub.stop();
      }
    });

    it('runs no consumer while the relay holds a transaction open', async () => {
      const ev = makeEvent();
      const openTransactions: number[] = [];
      const sub = await server.consume(
        ev,
        async () => {
          // A relay holding a transaction across the publish would sit idle in it while this runs. Only
          // that state is counted: the probes of one round run together, and a connection the pool is
          // still opening for one of them runs its own start-up transaction (CI saw two of those).
          const { rows } = await pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`,
          );
          openTransactions.push(rows[0]!.n);
        },
        { durable: `x${uid()}` },
      );
      for (let n = 0; n < 5; n++) await enqueueEvent(pool, 'box', ev, { n });
      const relay = startOutboxRelay({ pool, bus: client, schema: 'box', events: [ev], log, pollMs: 50 });
      relay.kick();
      await until(() => openTransactions.length >= 5, 'all 5 outbox events handled', 30_000);
      expect(openTransactions.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
      await relay.stop();
      await sub.stop();
    });
  });
});

describe('in-process bus: durables declared up front (JetStream keeps events for a durable that registers later)', () => {
  it('holds a publish until the declared durable has a consumer, then hands the event to it', async () => {
    const ev = makeEvent();
    const bus = createMemoryBus(log, { durables: [{ durable: 'late', filter: 'events.>' }] });
    const seen: number[] = [];
    let stored = false;
    const publishing = bus.publish(ev, { n: 7 }, randomUUID()).then(() => {
      stored = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stored).toBe(false);
    await bus.consume(ev, async (p) => void seen.push(p.n), { durable: 'late', filter: 'events.>' });
    await publishing;
    expect(seen).toEqual([7]);
    await bus.close();
  });
});

describe('NATS: a stopping service', () => {
  it('answers the requests it has taken before its connection closes (rolling pods lose no request)', async () => {
    const [server, client] = await Promise.all([createNatsBus({ servers: sharedNatsUrl(), name: 'stopping', log }), createNatsBus({ servers: sharedNatsUrl(), name: 'caller', log })]);
    try {
      const rpc = makeRpc();
      let started = () => undefined as void;
      const handlerStarted = new Promise<void>((r) => (started = r));
      let release = () => undefined as void;
      const released = new Promise<void>((r) => (release = r));
      const sub = server.serve(rpc, async ({ a, b }) => {
        started();
        await released;
        return { sum: a + b };
      });
      await Promise.all([server.flush(), client.flush()]);
      const answer = client.request(rpc, { a: 20, b: 22 }, { timeoutMs: 5_000 });
      await handlerStarted;
      // what SIGTERM does: stop serving, then close the connection
      const stopped = sub.stop().then(() => server.close());
      setTimeout(release, 500); // a handler still busy (a slow query) while the stop goes on

      await expect(answer).resolves.toEqual({ sum: 42 });
      await stopped;
    } finally {
      await client.close();
    }
  });
});
