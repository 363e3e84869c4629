import { randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { defineEvent, EVENT_STREAM, REMINDERS_MARK, taskEvent, taskEventMessage, taskEvents } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { quietLogger, sharedNatsUrl, until } from '../../../../tools/testenv/index.ts';
import { BATCH_HEADER, decodeBatch, encodeBatch, groupForSending, markHeader, MAX_BATCH_BYTES, MAX_BATCH_EVENTS, type OutgoingEvent } from './event-batch.ts';
import { createMemoryBus } from './memory.ts';
import { createNatsBus } from './nats.ts';
import type { Bus, EventMeta } from './types.ts';

const log = quietLogger();
const uid = () => randomUUID().slice(0, 8);
/** `even` marks the events a marked consumer needs. */
const makeMarked = () => defineEvent(`events.mark${uid()}.happened`, z.object({ n: z.number() }).strict(), { marks: { even: (p) => p.n % 2 === 0 } });
const enc = new TextEncoder();
const out = (subject: string, n: number, extra: Partial<OutgoingEvent> = {}): OutgoingEvent => ({ subject, id: `id-${n}`, json: JSON.stringify({ n }), ...extra });

describe('event batches on the wire (pure)', () => {
  it('groups consecutive events of one subject, in order, cut at the count and byte limits', () => {
    const events = [out('a', 1), out('a', 2), out('b', 3), out('a', 4)];
    expect(groupForSending(events).map((g) => g.map((e) => e.id))).toEqual([['id-1', 'id-2'], ['id-3'], ['id-4']]);

    const many = Array.from({ length: MAX_BATCH_EVENTS * 2 + 1 }, (_, i) => out('a', i));
    expect(groupForSending(many).map((g) => g.length)).toEqual([MAX_BATCH_EVENTS, MAX_BATCH_EVENTS, 1]);

    const big = 'x'.repeat(MAX_BATCH_BYTES / 2);
    const heavy = [out('a', 1, { json: JSON.stringify(big) }), out('a', 2, { json: JSON.stringify(big) }), out('a', 3, { json: JSON.stringify('x'.repeat(MAX_BATCH_BYTES * 2)) }), out('a', 4)];
    // two halves (plus their quotes) exceed the limit; an event over the limit goes alone
    expect(groupForSending(heavy).map((g) => g.map((e) => e.id))).toEqual([['id-1'], ['id-2'], ['id-3'], ['id-4']]);
  });

  it('decodes what it encodes, with each event\'s id and trace context; the message id follows the set of event ids', () => {
    const events = [out('a', 1, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }), out('a', 2)];
    const { body, msgId } = encodeBatch(events);
    expect(decodeBatch(body)).toEqual([
      { id: 'id-1', data: { n: 1 }, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      { id: 'id-2', data: { n: 2 }, traceparent: undefined },
    ]);
    expect(encodeBatch(events).msgId).toBe(msgId);
    expect(encodeBatch([events[0]!, out('a', 3)]).msgId).not.toBe(msgId);
    // a consumer of an older release reads a message body as one JSON value: a batch must fail that
    // parse (it is asked for again) rather than pass it and fail the event's schema (it is dropped)
    expect(() => JSON.parse(body)).toThrow(SyntaxError);
    expect(() => decodeBatch('{"data":1}')).toThrow(/no id/);
  });
});

describe('event batches over NATS', () => {
  let publisher: Bus;
  let consumer: Bus;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  beforeAll(async () => {
    [publisher, consumer] = await Promise.all([createNatsBus({ servers: sharedNatsUrl(), name: 'batch-pub', log }), createNatsBus({ servers: sharedNatsUrl(), name: 'batch-sub', log })]);
    nc = await connect({ servers: sharedNatsUrl() });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    await Promise.all([publisher.close(), consumer.close(), nc.close()]);
  });

  const storedOn = async (subject: string): Promise<number> => (await jsm.streams.info(EVENT_STREAM, { subjects_filter: subject })).state.subjects?.[subject] ?? 0;
  const makeEvent = () => defineEvent(`events.batch${uid()}.happened`, z.object({ n: z.number() }));

  it('stores the events published in one turn as few messages; each reaches the consumer with its own id; the same round again is dropped', async () => {
    const ev = makeEvent();
    const got: { n: number; meta: EventMeta }[] = [];
    const sub = await consumer.consume(ev, async (p, meta) => void got.push({ n: p.n, meta }), { durable: `d${uid()}` });
    const ids = Array.from({ length: 100 }, () => randomUUID());
    const round = () => Promise.all(ids.map((id, n) => publisher.publish(ev, { n }, id)));
    await round();
    await until(() => got.length >= 100, 'all 100 events handled', 15_000);
    expect(await storedOn(ev.subject)).toBe(2); // 64 + 36
    expect(got.map((g) => g.n)).toEqual(Array.from({ length: 100 }, (_, n) => n)); // one after another, in order (concurrency 1)
    expect(got.map((g) => g.meta.msgId)).toEqual(ids);
    expect(got.every((g) => g.meta.subject === ev.subject && g.meta.deliveryCount === 1)).toBe(true);

    await round(); // a relay that crashed before marking its round publishes the same rows again
    await publisher.publish(ev, { n: 100 }, randomUUID()); // and something new behind them
    await until(() => got.length >= 101, 'the new event handled', 15_000);
    expect(await storedOn(ev.subject)).toBe(3);
    expect(got.length).toBe(101);
    await sub.stop();
  });

  it('redelivers a whole message when one of its events fails, until every event is handled', async () => {
    const ev = makeEvent();
    const handled = new Map<number, number[]>();
    let failOnce = true;
    const sub = await consumer.consume(
      ev,
      async (p, meta) => {
        if (p.n === 5 && failOnce) {
          failOnce = false;
          throw new Error('transient');
        }
        handled.set(p.n, [...(handled.get(p.n) ?? []), meta.deliveryCount]);
      },
      { durable: `d${uid()}`, concurrency: 4 },
    );
    await Promise.all(Array.from({ length: 10 }, (_, n) => publisher.publish(ev, { n }, randomUUID())));
    await until(() => handled.has(5), 'the failed event handled on redelivery', 15_000);
    expect([...handled.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, n) => n));
    expect(handled.get(5)).toEqual([2]);
    // the others of that message came again with it (handlers are idempotent on the event id)
    expect(handled.get(0)).toEqual([1, 2]);
    await sub.stop();
  });

  it('drops an event of a batch that fails its schema and hands over the rest, with their trace context', async () => {
    const ev = makeEvent();
    const got: { n: number; traceparent?: string | undefined }[] = [];
    const sub = await consumer.consume(ev, async (p, meta) => void got.push({ n: p.n, traceparent: meta.traceparent }), { durable: `d${uid()}` });
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { body, msgId } = encodeBatch([out(ev.subject, 1, { traceparent: tp }), { subject: ev.subject, id: 'bad', json: '{"n":"one"}' }, out(ev.subject, 3)]);
    const h = natsHeaders();
    h.set(BATCH_HEADER, '3');
    await jetstream(nc).publish(ev.subject, new TextEncoder().encode(body), { msgID: msgId, headers: h });
    await until(() => got.length >= 2, 'the two valid events', 15_000);
    expect(got).toEqual([{ n: 1, traceparent: tp }, { n: 3, traceparent: undefined }]);
    await sub.stop();
  });

  it('asks again for a message it cannot read (a newer form, perhaps) rather than drop it', async () => {
    const ev = makeEvent();
    const durable = `d${uid()}`;
    const sub = await consumer.consume(ev, async () => undefined, { durable });
    const h = natsHeaders();
    h.set(BATCH_HEADER, '2');
    await jetstream(nc).publish(ev.subject, new TextEncoder().encode('not an event batch'), { headers: h });
    await until(async () => (await jsm.consumers.info(EVENT_STREAM, durable)).num_redelivered >= 1, 'the unreadable message delivered again', 15_000);
    await sub.stop();
  });

  it('hands a message\'s events to the handler one at a time by default, and several at once when asked', async () => {
    const overlap = async (concurrency?: number): Promise<number> => {
      const ev = makeEvent();
      let active = 0;
      let most = 0;
      let done = 0;
      const sub = await consumer.consume(
        ev,
        async () => {
          most = Math.max(most, ++active);
          await new Promise((r) => setTimeout(r, 5));
          active--;
          done++;
        },
        { durable: `d${uid()}`, ...(concurrency ? { concurrency } : {}) },
      );
      await Promise.all(Array.from({ length: 20 }, (_, n) => publisher.publish(ev, { n }, randomUUID())));
      await until(() => done >= 20, 'all 20 handled', 15_000);
      await sub.stop();
      return most;
    };
    expect(await overlap()).toBe(1);
    expect(await overlap(8)).toBe(8);
  });

  // Event marks (issues 58/61): a consumer that needs only the events carrying a mark (the scheduler:
  // task events with a reminder schedule) acks the others unread when their publisher marked them; a
  // publisher of an older release marks nothing and every event is read; a consumer that asks for no
  // mark (or of an older release) gets every event as before.
  /** Every message of the stream up to `seq` acknowledged by the durable, none asked for again. */
  const allAcked = async (durable: string, seq: number) => {
    const info = await until(async () => {
      const i = await jsm.consumers.info(EVENT_STREAM, durable);
      return i.ack_floor.stream_seq >= seq && i.num_ack_pending === 0 && i.num_pending === 0 ? i : null;
    }, `every message up to ${seq} acknowledged by ${durable}`, 15_000);
    expect(info.num_redelivered).toBe(0);
  };

  it('acks events marked as not carrying the mark without decoding them (a body that is not even JSON), and reads only the marked lines of a batch', async () => {
    const ev = makeMarked();
    const durable = `d${uid()}`;
    const got: { n: number; meta: EventMeta }[] = [];
    const sub = await consumer.consume(ev, async (p, meta) => void got.push({ n: p.n, meta }), { durable, marked: 'even' });
    const js = jetstream(nc);
    // a lone event its publisher marked `0`: decoded, its body would fail to parse and be asked for again
    const lone = natsHeaders();
    lone.set(markHeader('even'), '0');
    await js.publish(ev.subject, enc.encode('not JSON at all'), { msgID: randomUUID(), headers: lone });
    // a batch whose unmarked lines are not JSON either; its marked line is an event
    const { body, msgId } = encodeBatch([
      { subject: ev.subject, id: 'x1', json: 'not JSON' },
      { subject: ev.subject, id: 'marked', json: JSON.stringify({ n: 2 }) },
      { subject: ev.subject, id: 'x3', json: '{"n":' },
    ]);
    const batch = natsHeaders();
    batch.set(BATCH_HEADER, '3');
    batch.set(markHeader('even'), '010');
    const last = await js.publish(ev.subject, enc.encode(body), { msgID: msgId, headers: batch });
    await allAcked(durable, last.seq);
    expect(got.map((g) => [g.n, g.meta.msgId])).toEqual([[2, 'marked']]);
    await sub.stop();
  });

  it('marks what its publisher sends (one header per mark, a flag per event) and hands a marked consumer only those events; an unmarked consumer gets all', async () => {
    const ev = makeMarked();
    const marked: number[] = [];
    const every: number[] = [];
    const subs = [
      await consumer.consume(ev, async (p) => void marked.push(p.n), { durable: `d${uid()}`, marked: 'even' }),
      // as a consumer of a release before marks reads: it knows no mark header
      await consumer.consume(ev, async (p) => void every.push(p.n), { durable: `d${uid()}` }),
    ];
    // what goes on the wire: a core subscriber on the subject sees each JetStream message as published
    const flags: string[] = [];
    const wire = nc.subscribe(ev.subject, { callback: (_err, m) => void flags.push(m.headers?.get(markHeader('even')) ?? 'none') });
    await nc.flush();
    await Promise.all(Array.from({ length: 6 }, (_, n) => publisher.publish(ev, { n }, randomUUID()))); // one batch
    await publisher.publish(ev, { n: 7 }, randomUUID()); // alone
    await publisher.publish(ev, { n: 8 }, randomUUID());
    await until(() => every.length >= 8 && marked.length >= 4, 'both consumers', 15_000);
    expect(every).toEqual([0, 1, 2, 3, 4, 5, 7, 8]);
    expect(marked).toEqual([0, 2, 4, 8]);
    expect(flags).toEqual(['101010', '0', '1']);
    wire.unsubscribe();
    for (const s of subs) await s.stop();
  });

  it('reads every event of a publisher that marks nothing (a release before marks), so none it needs is lost', async () => {
    const ev = makeMarked();
    const durable = `d${uid()}`;
    const got: number[] = [];
    const sub = await consumer.consume(ev, async (p) => void got.push(p.n), { durable, marked: 'even' });
    const js = jetstream(nc);
    // the wire of that release: a lone event and a batch, no mark header
    await js.publish(ev.subject, enc.encode(JSON.stringify({ n: 1 })), { msgID: randomUUID() });
    const { body, msgId } = encodeBatch([2, 3].map((n) => ({ subject: ev.subject, id: randomUUID(), json: JSON.stringify({ n }) })));
    const h = natsHeaders();
    h.set(BATCH_HEADER, '2');
    // a flag string of another length says nothing usable either
    h.set(markHeader('even'), '1');
    const last = await js.publish(ev.subject, enc.encode(body), { msgID: msgId, headers: h });
    await allAcked(durable, last.seq);
    expect(got).toEqual([1, 2, 3]);
    await sub.stop();
  });

  it('task events: the scheduler\'s mark is set on those that carry a reminder schedule (or just lost it), and only they reach a consumer of it', async () => {
    // the task events' schema and marks on a subject of this test's own (the shared server's events.task.* belong to others)
    const ev = defineEvent(`events.mark${uid()}.task`, taskEventMessage, { marks: taskEvents['task.created'].marks! });
    const got: string[] = [];
    const sub = await consumer.consume(ev, async (m) => void got.push(m.payload.task.title), { durable: `d${uid()}`, marked: REMINDERS_MARK });
    const task = (title: string) => ({ id: randomUUID(), userId: randomUUID(), title, type: 'ONE_TIME' as const, priority: 'NORMAL' as const, createdAt: new Date() });
    const at = new Date(Date.now() + 3_600_000).toISOString();
    await Promise.all([
      publisher.publish(ev, taskEvent('task.created', task('plain')), randomUUID()),
      publisher.publish(ev, taskEvent('task.created', task('with a reminder'), { reminders: { version: new Date().toISOString(), due: [{ key: 'r1', at }] } }), randomUUID()),
      publisher.publish(ev, taskEvent('task.updated', task('reminders removed'), { reminders: { version: new Date().toISOString(), due: [] } }), randomUUID()),
      publisher.publish(ev, taskEvent('task.updated', task('plain too')), randomUUID()),
    ]);
    await until(() => got.length >= 2, 'the two events with a schedule', 15_000);
    await publisher.publish(ev, taskEvent('task.created', task('last')), randomUUID());
    await publisher.publish(ev, taskEvent('task.created', task('the end'), { reminders: { version: new Date().toISOString(), due: [] } }), randomUUID());
    await until(() => got.length >= 3, 'the last event with a schedule', 15_000);
    expect(got).toEqual(['with a reminder', 'reminders removed', 'the end']);
    await sub.stop();
  });
});

describe('event marks in-process', () => {
  it('hands a marked consumer only the events with its mark, every event to the others; every publish resolves', async () => {
    const ev = makeMarked();
    const bus = createMemoryBus(log);
    const marked: number[] = [];
    const every: number[] = [];
    await bus.consume(ev, async (p) => void marked.push(p.n), { durable: `d${uid()}`, filter: ev.subject, marked: 'even' });
    await bus.consume(ev, async (p) => void every.push(p.n), { durable: `d${uid()}`, filter: ev.subject });
    await Promise.all(Array.from({ length: 5 }, (_, n) => bus.publish(ev, { n }, randomUUID())));
    // concurrent publishes: in-process each goes its own way through the durables
    expect(marked.sort()).toEqual([0, 2, 4]);
    expect(every.sort()).toEqual([0, 1, 2, 3, 4]);
    // the publisher's own check still refuses a bad event that no consumer read
    const skipOnly = makeMarked();
    const bus2 = createMemoryBus(log);
    await bus2.consume(skipOnly, async () => undefined, { durable: `d${uid()}`, filter: skipOnly.subject, marked: 'even' });
    await expect(bus2.publish(skipOnly, { n: 1, extra: true } as never, randomUUID())).rejects.toThrow(/invalid event/);
    await Promise.all([bus.close(), bus2.close()]);
  });

  it('parks an event whose mark cannot be worked out (a null payload) at the marked consumer; the publish resolves', async () => {
    const ev = makeMarked();
    const bus = createMemoryBus(log);
    const parked: { msgId: string; data: unknown }[] = [];
    const durable = `d${uid()}`;
    await bus.consume(ev, async () => undefined, { durable, filter: ev.subject, marked: 'even', park: async (p) => void parked.push({ msgId: p.msgId, data: p.data }) });
    const id = randomUUID();
    // the mark reads p.n and would throw on null: the relay would then retry the row for ever
    await bus.publish(ev, null as never, id);
    expect(parked).toEqual([{ msgId: id, data: null }]);
    await bus.close();
  });
});
