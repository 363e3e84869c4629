/**
 * A refused change of the events stream's replicas (nats.ts changeReplicas) is tried again in the
 * background while the bus goes on, and given up after REPLICA_TRIES. A 3-server cluster refuses 5
 * replicas every time (a lone server takes any count and ignores it), so every try is seen through to
 * the last; the cluster's successful change to 3 is nats-cluster.test.ts.
 */
import { Writable } from 'node:stream';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { defineEvent, EVENT_STREAM } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { natsServerConfig } from '../../../../operator/src/desired.ts';
import { quietLogger, startNatsCluster, until, type LocalNatsCluster } from '../../../../tools/testenv/index.ts';
import { createLogger } from '../logger.ts';
import { createNatsBus, REPLICA_TRIES } from './nats.ts';
import type { Bus } from './types.ts';

const happened = defineEvent('events.replicatest.happened', z.object({ n: z.number() }));

describe('changing the events stream replicas on a cluster that refuses it', () => {
  let nats: LocalNatsCluster;
  const buses: Bus[] = [];
  beforeAll(async () => {
    nats = await startNatsCluster({ size: 3, render: natsServerConfig });
  });
  afterAll(async () => {
    for (const b of buses) await b.close();
    await nats?.stop();
  });

  it('tries again in the background, publishing meanwhile, and after the last try keeps the stream as it is', async () => {
    const auth = { user: nats.user, pass: nats.password };
    const first = await createNatsBus({ servers: nats.url, name: 'first', log: quietLogger(), streamReplicas: 1, connect: auth });
    buses.push(first);
    // the three elect a JetStream meta leader first
    await until(() => first.publish(happened, { n: 1 }, 'e-1').then(() => true, () => false), 'the first event stored', 60_000);

    const lines: { msg: string; time: string }[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as { msg: string; time: string });
        done();
      },
    });
    const retryMs = 30;
    const second = await createNatsBus({ servers: nats.url, name: 'second', log: createLogger('replicas-test', 'warn', { destination }), streamReplicas: 5, replicaRetryMs: retryMs, connect: auth });
    buses.push(second);
    // the refused change does not hold the event up
    await second.publish(happened, { n: 2 }, 'e-2');
    expect(lines.map((l) => l.msg)).toEqual(['events stream replicas not changed yet; trying again']);

    const gaveUp = await until(() => lines.find((l) => l.msg === 'events stream replicas not changed; it keeps its own'), 'the last try given up', 20_000);
    // it waited between its tries: at least the pauses before the last
    expect(Date.parse(gaveUp.time) - Date.parse(lines[0]!.time)).toBeGreaterThanOrEqual((REPLICA_TRIES - 1) * retryMs);
    expect(lines).toHaveLength(2);

    const nc = await connect({ servers: nats.url.split(','), ...auth });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(EVENT_STREAM);
      expect([info.config.num_replicas, info.state.messages]).toEqual([1, 2]);
    } finally {
      await nc.close();
    }
  });
});
