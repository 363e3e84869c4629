import { randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { defineEvent, EVENT_STREAM } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { quietLogger, sharedNatsUrl, until } from '../../../../tools/testenv/index.ts';
import { BATCH_HEADER, decodeBatch, encodeBatch, groupForSending, MAX_BATCH_BYTES, MAX_BATCH_EVENTS, type OutgoingEvent } from './event-batch.ts';
import { createNatsBus } from './nats.ts';
import type { Bus, EventMeta } from './types.ts';

const log = quietLogger();
const uid = () => randomUUID().slice(0, 8);
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
});
