import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineEvent, taskEvent, taskEventMessage, taskEventPayload, taskEventTask } from '@tasksvc/proto';
import { fileNats } from '../../../tools/testenv/index.ts';
import { startReceiver, startWebhookHarness, until, type Harness, type Receiver } from '../test/support.ts';

/**
 * Two releases side by side (issue 54): task events from a producer one release ahead (a key this
 * webhook service does not know, at the top and inside the task) and one release behind (an optional
 * key it does know left out) reach this consumer over NATS JetStream and are delivered; none is
 * dropped and none is parked.
 */

const nats = fileNats();
let h: Harness;
let rx: Receiver;
const user = randomUUID();

/** What another release's producer puts on the wire: keys this release does not know kept, any task key left out. */
const raw = defineEvent('events.task.created', taskEventMessage.extend({ payload: taskEventPayload.extend({ task: taskEventTask.partial().loose() }).loose() }).loose());

beforeAll(async () => {
  rx = await startReceiver();
  h = await startWebhookHarness({ OUTBOUND_ALLOW_LIST: '127.0.0.1' }, { natsUrl: nats.url() });
}, 60_000);
afterAll(async () => {
  await h?.stop();
  await rx?.close();
});

describe('task events of the next and the previous release', () => {
  it('are all delivered, with unknown keys ignored and a missing optional key read as its default; nothing parked', async () => {
    expect((await h.call('POST', '/api/settings/webhooks', user, { url: `${rx.url}/hook` })).status).toBe(201);
    const message = (title: string) => taskEvent('task.created', { id: randomUUID(), userId: user, title, type: 'ONE_TIME', priority: 'NORMAL', createdAt: new Date() });

    // the next release: one more key in the task, one more beside the payload
    const next = message('from the next release');
    await h.bus.publish(raw, { ...next, traceColour: 'blue', payload: { ...next.payload, task: { ...next.payload.task, colour: 'teal' } } }, randomUUID());

    // the previous release: an optional task key it did not have yet (nullable keys read as null)
    const optional = Object.keys(taskEventTask.shape).filter((k) => taskEventTask.shape[k as keyof typeof taskEventTask.shape].safeParse(null).success);
    expect(optional.length).toBeGreaterThan(0);
    const prev = message('from the previous release');
    const olderTask: Record<string, unknown> = { ...prev.payload.task };
    for (const k of optional) delete olderTask[k];
    await h.bus.publish(raw, { ...prev, payload: { ...prev.payload, task: olderTask } }, randomUUID());

    const bodies = await until(async () => {
      const got = rx.requests.filter((r) => r.path === '/hook').map((r) => JSON.parse(r.raw.toString()) as { task: Record<string, unknown> });
      return got.length >= 2 ? got : null;
    }, 'both deliveries', 30_000);
    const byTitle = new Map(bodies.map((b) => [b.task.title, b.task]));
    expect(byTitle.get('from the next release')).toEqual(next.payload.task);
    expect(byTitle.get('from the next release')).not.toHaveProperty('colour');
    const older = byTitle.get('from the previous release')!;
    expect(older).toMatchObject({ id: prev.payload.task.id, title: 'from the previous release' });
    for (const k of optional) expect(older[k], k).toBeNull();
    const parked = await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook.dead_letters');
    expect(parked.rows[0]!.n).toBe(0);
  }, 60_000);
});
