/**
 * The bus on a 3-server JetStream cluster configured by the operator's own nats-server configuration
 * (operator/src/desired.ts natsServerConfig, as spec.nats.replicas 3 renders it): under a steady stream
 * of events, the stream's leader is killed (SIGKILL) and started again. Nothing a publish acknowledged
 * is lost, the durable consumer keeps receiving, and the restarted server catches up.
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { defineEvent, EVENT_STREAM } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { natsServerConfig } from '../../../../operator/src/desired.ts';
import { quietLogger, startNatsCluster, until, type LocalNatsCluster, type LocalNatsClusterServer } from '../../../../tools/testenv/index.ts';
import { createNatsBus } from './nats.ts';
import type { Bus } from './types.ts';

const log = quietLogger();
/** What a server's /jsz?accounts=true&streams=true says of the streams it holds a copy of. */
type JszStreams = { account_details?: { stream_detail?: { name: string; state: { messages: number; last_seq: number } }[] }[] };
const happened = defineEvent('events.clustertest.happened', z.object({ n: z.number() }));

describe('bus on a 3-server NATS JetStream cluster (the operator-rendered configuration)', () => {
  let cluster: LocalNatsCluster;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  const buses: Bus[] = [];
  const bus = async (name: string, streamReplicas: number) => {
    const b = await createNatsBus({ servers: cluster.url, name, log, streamReplicas, connect: { user: cluster.user, pass: cluster.password } });
    buses.push(b);
    return b;
  };

  beforeAll(async () => {
    cluster = await startNatsCluster({ size: 3, render: natsServerConfig });
    admin = await connect({ servers: cluster.url.split(','), user: cluster.user, pass: cluster.password, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    jsm = await jetstreamManager(admin, { checkAPI: false });
    // JetStream answers once the three have elected a meta leader
    await until(async () => (await jsm.getAccountInfo().catch(() => undefined)) !== undefined, 'the JetStream meta leader', 60_000);
  });

  afterAll(async () => {
    for (const b of buses) await b.close();
    await admin?.close();
    await cluster?.stop();
  });

  it('a stream made with 1 replica becomes 3 when a service starts with NATS_STREAM_REPLICAS=3; acknowledged events survive SIGKILL of its leader', async () => {
    // an installation from before the cluster option: its stream has one replica
    const before = await bus('before', 1);
    await before.publish(happened, { n: -1 }, 'e-before');
    expect((await jsm.streams.info(EVENT_STREAM)).config.num_replicas).toBe(1);

    const publisher = await bus('publisher', 3);
    const consumer = await bus('consumer', 3);
    const received = new Set<string>();
    await consumer.consume(happened, async (_p, meta) => void received.add(meta.msgId), { durable: 'cluster-test' });
    await until(async () => (await jsm.streams.info(EVENT_STREAM)).config.num_replicas === 3, 'the stream changed to 3 replicas');
    const fullyReplicated = async () => {
      const info = await jsm.streams.info(EVENT_STREAM);
      const replicas = info.cluster?.replicas ?? [];
      return info.cluster?.leader && replicas.length === 2 && replicas.every((r) => r.current && !r.offline && !r.lag) ? info : undefined;
    };
    const leaderName = (await until(fullyReplicated, 'a leader and two current replicas', 60_000)).cluster!.leader!;
    // "current" is the raft log's view: a new replica still copying the events stored before the change
    // (catchup) reports current too, and cannot lead until it holds them. Killing the only full copy then
    // stalls the stream until it returns (NATS will not elect a replica that would lose events), so the kill
    // waits until every server's own copy (its monitoring /jsz) holds what the leader held. Nothing publishes
    // until the loops below start, so the leader's state is fixed here.
    const { state } = await jsm.streams.info(EVENT_STREAM);
    const heldBy = async (server: LocalNatsClusterServer) => {
      const jsz = (await (await fetch(`${server.monitorUrl}/jsz?accounts=true&streams=true`)).json()) as JszStreams;
      return jsz.account_details?.flatMap((a) => a.stream_detail ?? []).find((d) => d.name === EVENT_STREAM)?.state;
    };
    await until(
      async () => (await Promise.all(cluster.servers.map(heldBy))).every((own) => own?.last_seq === state.last_seq && own.messages === state.messages),
      `every server holding the stream's ${state.messages} events (seq ${state.first_seq}-${state.last_seq})`,
      60_000,
    );

    // steady load: 4 publishers in a loop, each awaiting its PubAck; a refused publish (in the failover) is not acknowledged
    const acked: string[] = [];
    let failed = 0;
    let lastRefusal = '';
    let running = true;
    let n = 0;
    const loop = async () => {
      while (running) {
        const id = `e-${n++}`;
        try {
          await publisher.publish(happened, { n }, id);
          acked.push(id);
        } catch (err) {
          // refused while the cluster elects a new leader: retried at a relay's pace, not in a spin
          failed++;
          lastRefusal = (err as Error).message;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const loops = Array.from({ length: 4 }, loop);
    try {
      await until(() => acked.length >= 200, '200 events acknowledged before the kill', 60_000);
      const leader = cluster.servers.find((s) => s.name === leaderName)!;
      await leader.kill();
      const atKill = acked.length;
      const receivedAtKill = received.size;
      // the two others elect a new leader and go on storing and delivering
      // on a timeout, say how far it got
      await until(() => acked.length >= atKill + 200, '200 more events acknowledged with one server dead', 60_000).catch((err: Error) => {
        throw new Error(`${err.message}: ${acked.length - atKill} acknowledged since the kill, ${failed} refused in all, the last refusal: ${lastRefusal || 'none'}`, { cause: err });
      });
      await until(() => received.size >= receivedAtKill + 200, 'the consumer receiving with one server dead', 60_000);
      await leader.start();
      const atRestart = acked.length;
      await until(() => acked.length >= atRestart + 200, '200 more events acknowledged after the restart', 60_000);
    } finally {
      running = false;
      await Promise.all(loops);
    }
    // the restarted server catches up: three current copies again
    await until(fullyReplicated, 'the restarted server current again', 60_000);
    const missing = () => acked.filter((id) => !received.has(id));
    await until(() => missing().length === 0 && received.has('e-before'), `every acknowledged event received (${acked.length} acknowledged, ${failed} refused)`, 60_000);
    expect(missing()).toEqual([]);
    expect((await jsm.streams.info(EVENT_STREAM)).config.num_replicas).toBe(3);
  }, 300_000);
});
