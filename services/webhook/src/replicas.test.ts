import { randomUUID } from 'node:crypto';
import { taskEvent, taskEvents, type TaskEventPayload } from '@tasksvc/proto';
import { createNatsBus, createPool, startService, type Bus, type Pool, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileNats, quietLogger, testSystemConfig } from '../../../tools/testenv/index.ts';
import { attemptLog } from './db/deliveries.ts';
import { webhookService } from './service.ts';
import { startReceiver, until, type Receiver } from '../test/support.ts';

/**
 * Three webhook replicas (each its own bus connection and pool) share one database and one durable
 * consumer. With a receiver that always answers 2xx, leases and SKIP LOCKED must make every
 * (event, endpoint) pair arrive exactly once, whichever replica ingests or sends it.
 */

const EVENTS = 300;
const nats = fileNats();
let rx: Receiver;
const replicas: { bus: Bus; pool: Pool; svc: RunningService }[] = [];

beforeAll(async () => {
  rx = await startReceiver();
  const config = await testSystemConfig({ OUTBOUND_ALLOW_LIST: '127.0.0.1' }, { natsUrl: nats.url() });
  for (let i = 0; i < 3; i++) {
    const log = quietLogger(`replica-${i}`);
    const pool = createPool(config.DATABASE_URL, log);
    const bus = await createNatsBus({ servers: config.NATS_URL!, name: `webhook-replica-${i}`, log });
    replicas.push({ bus, pool, svc: await startService(webhookService, { config, bus, pool, log }) });
  }
}, 120_000);

afterAll(async () => {
  for (const r of replicas) {
    await r.svc.stop();
    await r.bus.close();
    await r.pool.end();
  }
  await rx?.close();
});

describe('webhook replicas', () => {
  it('three replicas deliver each (event, endpoint) pair exactly once', async () => {
    const user = randomUUID();
    const { pool, bus } = replicas[0]!;
    for (const path of ['/a', '/b']) {
      await pool.query('INSERT INTO webhook.endpoints (id, user_id, url) VALUES ($1, $2, $3)', [randomUUID(), user, `${rx.url}${path}`]);
    }
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const message = taskEvent('task.created', { id: randomUUID(), userId: user, title: `r${i}`, type: 'ONE_TIME', priority: 'NORMAL', createdAt: new Date() });
      ids.push(message.payload.task.id);
      await bus.publish(taskEvents['task.created'], message, randomUUID());
    }
    await until(async () => rx.requests.length >= EVENTS * 2, `${EVENTS * 2} deliveries`, 120_000);
    // let any duplicate that is on its way arrive: wait until the log is fully settled
    await until(async () => (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook.deliveries WHERE status = 'delivered'")).rows[0]!.n === EVENTS * 2, 'log settled');
    const seen = new Map<string, number>();
    for (const r of rx.requests) {
      const key = `${r.path} ${(JSON.parse(r.raw.toString()) as TaskEventPayload).task.id}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    expect(seen.size).toBe(EVENTS * 2);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(rx.requests).toHaveLength(EVENTS * 2);
    // each delivery was attempted once, and that attempt delivered
    const deliveries = await pool.query<{ id: string }>('SELECT id FROM webhook.deliveries');
    expect(deliveries.rows).toHaveLength(EVENTS * 2);
    const logs = await Promise.all(deliveries.rows.map((d) => attemptLog(pool, d.id)));
    expect(logs.filter((l) => l.length !== 1 || l[0]!.attempt !== 1 || l[0]!.outcome !== 'delivered')).toEqual([]);
  });
});
