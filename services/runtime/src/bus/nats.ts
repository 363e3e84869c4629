import { randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, nanos, type ConnectionOptions, type NatsConnection, type Subscription as NatsSub } from '@nats-io/transport-node';
import { anonymousServerProblem } from '../nats-auth.ts';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { AppError, EVENT_STREAM, EVENT_SUBJECTS, eventMarks, parseMessage, REQUEST_ID_HEADER, type EventDef, type ReplyEnvelope, type Rpc } from '@tasksvc/proto';
import type { Logger } from '../logger.ts';
import { currentTraceparent } from '../tracing.ts';
import { envelopeJson, handleRequest, readEvent, replyDataJson, requestContext, unwrapReply } from './envelope.ts';
import { BATCH_HEADER, decodeBatch, encodeBatch, groupForSending, markFlags, markHeader, markHeaders, type BatchedEvent, type OutgoingEvent } from './event-batch.ts';
import { instrumentBus } from './instrument.ts';
import { createReplyInbox } from './reply-inbox.ts';
import { requestHeaders, TRACEPARENT } from './request-headers.ts';
import { createSendQueue } from './send-queue.ts';
import type { Bus, ConsumeOptions, EventMeta, RequestOptions, ServeOptions, Subscription } from './types.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();
const encode = (v: unknown) => enc.encode(JSON.stringify(v ?? null));
const decode = (b: Uint8Array): unknown => (b.length === 0 ? undefined : JSON.parse(dec.decode(b)));


/**
 * What nats.js may buffer before it writes at once, in the middle of a turn (its hidden `pendingLimit`,
 * 32 KiB by default). A page of 50 tasks is a ~36 KB reply, so with the default each such reply went
 * out in a write of its own as soon as another was buffered, and the send queue (send-queue.ts) no
 * longer put the replies of one turn into one write: each write costs the sender a system call that
 * carries loopback TCP's work and wakes nats-server. Everything buffered is still written at the end
 * of the turn (nats.js's microtask), so this bounds nothing but the size of one write.
 */
export const PENDING_LIMIT = 1024 * 1024;

/** How every bus connects (the deployment's authentication and TLS, `connect`, go on top). */
export function connectionOptions(opts: Pick<NatsBusOptions, 'servers' | 'name' | 'connect'>): ConnectionOptions {
  return {
    servers: opts.servers.split(',').map((s) => s.trim()),
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    pingInterval: 10_000,
    // Otherwise every JetStream publish (a nats.js request underneath; our own requests go through
    // reply-inbox.ts) builds two Error objects up front, stack traces for a failure that almost never
    // comes. Errors keep their types and messages; they only lose the line that started the operation.
    noAsyncTraces: true,
    // not in nats.js's ConnectionOptions type: read by its protocol handler
    ...({ pendingLimit: PENDING_LIMIT } as Partial<ConnectionOptions>),
    ...opts.connect,
  };
}

/** JetStream drops a re-published outbox id within this window (the relay retries well inside it). */
const DUPLICATE_WINDOW_MS = 15 * 60_000;
/** Events older than this leave the stream; consumers are expected to keep up far sooner. */
const EVENT_MAX_AGE_MS = 14 * 24 * 3_600_000;

interface Pending extends OutgoingEvent {
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Runs `fn` over the items, at most `limit` at once; one at a time, `between` runs before each item
 * after the first (JetStream's "still working": a message of many events handled one by one can take
 * longer than its ack wait).
 */
async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>, between: () => void): Promise<void> {
  if (limit <= 1) {
    for (const [i, item] of items.entries()) {
      if (i > 0) between();
      await fn(item);
    }
    return;
  }
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function redeliveryDelayMs(deliveryCount: number): number {
  return Math.min(30_000, 500 * 2 ** Math.min(deliveryCount - 1, 6));
}

export interface NatsBusOptions {
  servers: string;
  name: string;
  log: Logger;
  /** authentication and TLS (nats-auth.ts) */
  connect?: Partial<ConnectionOptions>;
  requireAuthentication?: boolean;
  /** servers that keep the events stream (NATS_STREAM_REPLICAS; default 1) */
  streamReplicas?: number;
  /** a refused change of the stream's replicas is tried again this often (default 5 s), at most REPLICA_TRIES times */
  replicaRetryMs?: number;
}

/** Attempts at changing an existing stream's replicas: with the default pause, a minute. */
export const REPLICA_TRIES = 12;

/** The NATS transport: core request/reply with queue groups, JetStream for durable events. */
export async function createNatsBus(opts: NatsBusOptions): Promise<Bus> {
  const { log } = opts;
  const nc: NatsConnection = await connect(connectionOptions(opts));
  const refused = anonymousServerProblem(nc.info, opts.requireAuthentication ?? false);
  if (refused) {
    await nc.close();
    throw new Error(`refusing to start: ${refused}`);
  }
  // broadcast subscribers told when theirs may have been lost (core NATS keeps nothing for an absent subscriber)
  const gapListeners = new Set<() => void>();
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect') {
        log.warn({ nats: s.type }, `nats ${s.type}`);
        for (const missed of gapListeners) missed();
      }
    }
  })();

  // requests and replies of one turn of the event loop leave in one write (send-queue.ts)
  const sends = createSendQueue();
  const replies = createReplyInbox(nc, sends, opts.connect?.inboxPrefix);
  const js = jetstream(nc);
  let jsm: JetStreamManager | undefined;
  let streamReady: Promise<void> | undefined;
  const replicas = opts.streamReplicas ?? 1;
  let closed = false;
  let replicaRetry: NodeJS.Timeout | undefined;
  /**
   * A stream made before the cluster (or with another count) is changed in place, keeping its events.
   * A refusal can pass (a cluster still electing, an API call timed out on a loaded node; with one
   * attempt the stream kept 1 replica until a restart, the likely cause of a CI failure), so it is tried
   * again in the background, the bus going on with the stream as it is; a cluster with too few servers
   * for the count refuses every time, and after the last try the stream keeps its own. The first try
   * takes the configuration ensureStream just read; a later one reads it again (another service may
   * have changed it meanwhile).
   */
  const changeReplicas = async (m: JetStreamManager, triesLeft: number, known?: StreamConfig): Promise<void> => {
    try {
      const config = known ?? (await m.streams.info(EVENT_STREAM)).config;
      if (config.num_replicas === replicas) return;
      await m.streams.update(EVENT_STREAM, { ...config, num_replicas: replicas });
      log.info({ stream: EVENT_STREAM, from: config.num_replicas, to: replicas }, 'events stream replicas changed');
    } catch (err) {
      if (closed) return;
      if (triesLeft <= 1) return log.warn({ err, stream: EVENT_STREAM, replicas }, 'events stream replicas not changed; it keeps its own');
      if (triesLeft === REPLICA_TRIES) log.warn({ err, stream: EVENT_STREAM, replicas, tries: REPLICA_TRIES }, 'events stream replicas not changed yet; trying again');
      replicaRetry = setTimeout(() => void changeReplicas(m, triesLeft - 1), opts.replicaRetryMs ?? 5_000);
      replicaRetry.unref();
    }
  };
  const ensureStream = (): Promise<void> => {
    streamReady ??= (async () => {
      jsm ??= await jetstreamManager(nc);
      const config = {
        name: EVENT_STREAM,
        subjects: [EVENT_SUBJECTS],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        max_age: nanos(EVENT_MAX_AGE_MS),
        duplicate_window: nanos(DUPLICATE_WINDOW_MS),
        num_replicas: replicas,
      };
      let existing;
      try {
        existing = await jsm.streams.info(EVENT_STREAM);
      } catch {
        try {
          await jsm.streams.add(config);
        } catch (err) {
          // another replica created it between our info and add
          await jsm.streams.info(EVENT_STREAM).catch(() => {
            throw err;
          });
        }
      }
      if (existing && existing.config.num_replicas !== replicas) await changeReplicas(jsm, REPLICA_TRIES, existing.config);
    })().catch((err: unknown) => {
      streamReady = undefined;
      throw err;
    });
    return streamReady;
  };

  // Events published in one turn of the event loop (an outbox round) leave together, as few
  // JetStream messages as their subjects allow (event-batch.ts); each publish resolves on its message's PubAck.
  let outgoing: Pending[] = [];
  const sendOutgoing = async () => {
    const round = outgoing;
    outgoing = [];
    try {
      await ensureStream();
    } catch (err) {
      for (const e of round) e.reject(new AppError('SERVICE_UNAVAILABLE', `event not stored: ${(err as Error).message}`));
      return;
    }
    for (const group of groupForSending(round)) {
      let stored: Promise<unknown>;
      const marks = markHeaders(group);
      if (group.length === 1) {
        const [e] = group as [Pending];
        let headers;
        if (e.traceparent || marks.length > 0) {
          headers = natsHeaders();
          if (e.traceparent) headers.set(TRACEPARENT, e.traceparent);
          for (const [k, v] of marks) headers.set(k, v);
        }
        stored = js.publish(e.subject, enc.encode(e.json), { msgID: e.id, timeout: 5_000, ...(headers ? { headers } : {}) });
      } else {
        const { body, msgId } = encodeBatch(group);
        const headers = natsHeaders();
        headers.set(BATCH_HEADER, String(group.length));
        for (const [k, v] of marks) headers.set(k, v);
        stored = js.publish(group[0]!.subject, enc.encode(body), { msgID: msgId, timeout: 5_000, headers });
      }
      stored.then(
        () => group.forEach((e) => e.resolve()),
        (err: unknown) => group.forEach((e) => e.reject(new AppError('SERVICE_UNAVAILABLE', `event not stored: ${(err as Error).message}`))),
      );
    }
  };

  const subs = new Set<NatsSub>();
  const stoppers = new Set<() => Promise<void>>();

  /** Send a checked request; resolves with the reply's bytes (an envelope). */
  const ask = async <Req>(rpc: Rpc<Req, unknown>, payload: Req, ro: RequestOptions): Promise<Uint8Array> => {
    const checked = ro.checked ? payload : parseMessage(rpc.request, payload, `request for ${rpc.subject}`);
    const h = requestHeaders(ro.requestId ?? randomUUID(), currentTraceparent());
    return (await replies.request(rpc.subject, encode(checked), { timeoutMs: ro.timeoutMs ?? 10_000, headers: h })).data;
  };

  return instrumentBus({
    kind: 'nats',

    async request<Req, Res>(rpc: Rpc<Req, Res>, payload: Req, ro: RequestOptions = {}): Promise<Res> {
      return unwrapReply(rpc, decode(await ask(rpc, payload, ro)));
    },

    async requestJson<Req>(rpc: Rpc<Req, unknown>, payload: Req, ro: RequestOptions = {}): Promise<Uint8Array> {
      return replyDataJson(rpc, await ask(rpc, payload, ro));
    },

    serve<Req, Res>(rpc: Rpc<Req, Res>, handler: (payload: Req, ctx: { requestId: string; log: Logger }) => Promise<Res>, so: ServeOptions = {}): Subscription {
      const queue = so.queue ?? rpc.subject.split('.')[0]!;
      // handlers still answering: stop() waits for them, so a stopping pod replies to what it took
      const inFlight = new Set<Promise<void>>();
      const sub = nc.subscribe(rpc.subject, {
        queue,
        callback: (err, msg) => {
          if (err) {
            log.error({ err, subject: rpc.subject }, 'subscription error');
            return;
          }
          const requestId = msg.headers?.get(REQUEST_ID_HEADER) || randomUUID();
          const answering = (async () => {
            let raw: unknown;
            let refused: ReplyEnvelope<unknown> | undefined;
            try {
              raw = decode(msg.data);
            } catch {
              refused = { ok: false, error: { code: 'BAD_REQUEST', message: 'request is not JSON' } };
            }
            const envelope = refused ?? (await handleRequest(rpc, raw, handler, requestContext(requestId, log), { traceparent: msg.headers?.get(TRACEPARENT), transport: 'nats' }));
            // resolved once sent, so stop() (which waits for this) never closes the connection before it
            await sends.send(() => msg.respond(enc.encode(envelopeJson(envelope)))).catch((err: unknown) => log.warn({ err, subject: rpc.subject, requestId }, 'reply not sent: the connection is closing'));
          })();
          inFlight.add(answering);
          void answering.finally(() => inFlight.delete(answering));
        },
      });
      subs.add(sub);
      return {
        async stop() {
          subs.delete(sub);
          await sub.drain();
          await Promise.allSettled([...inFlight]);
        },
      };
    },

    async publish<T>(event: EventDef<T>, payload: T, msgId: string): Promise<void> {
      const data = parseMessage(event.schema, payload, `event ${event.subject}`);
      const marks = eventMarks(event, data);
      // no await before the push: every publish of this turn joins the same round
      return new Promise<void>((resolve, reject) => {
        outgoing.push({ subject: event.subject, id: msgId, json: JSON.stringify(data ?? null), traceparent: currentTraceparent() ?? undefined, marks, resolve, reject });
        if (outgoing.length === 1) setImmediate(() => void sendOutgoing());
      });
    },

    async consume<T>(event: EventDef<T>, handler: (payload: T, meta: EventMeta) => Promise<void>, co: ConsumeOptions): Promise<Subscription> {
      await ensureStream();
      const config = {
        durable_name: co.durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: co.filter ?? event.subject,
        ack_wait: nanos(co.ackWaitMs ?? 30_000),
        max_deliver: -1,
      };
      try {
        await jsm!.consumers.add(EVENT_STREAM, config);
      } catch {
        await jsm!.consumers.update(EVENT_STREAM, co.durable, config);
      }
      // the header saying which events carry the one mark this consumer needs (types.ts `marked`)
      const wanted = co.marked ? markHeader(co.marked) : undefined;
      let stopped = false;
      let current: { stop(): unknown } | undefined;
      const loop = async () => {
        // consume() survives reconnects by itself; the outer loop restarts it if it ever ends.
        while (!stopped) {
          try {
            const consumer = await js.consumers.get(EVENT_STREAM, co.durable);
            const messages = await consumer.consume({ max_messages: 64 });
            current = messages;
            for await (const m of messages) {
              const batched = m.headers?.get(BATCH_HEADER);
              // which events carry the needed mark, when the publisher said so: the others are not read
              const only = wanted ? markFlags(m.headers?.get(wanted), batched ? Number(batched) : 1) : undefined;
              if (only !== undefined && !only.includes('1')) {
                m.ack();
                continue;
              }
              let events: BatchedEvent[];
              try {
                events = batched ? decodeBatch(dec.decode(m.data), only) : [{ id: m.headers?.get('Nats-Msg-Id') || `${m.seq}`, data: decode(m.data), traceparent: m.headers?.get(TRACEPARENT) || undefined }];
              } catch (err) {
                // as a consumer of an older release does with a batch: perhaps a newer form; never dropped
                log.warn({ err, subject: m.subject, seq: m.seq }, 'event message is not readable; will redeliver');
                m.nak(redeliveryDelayMs(m.info.deliveryCount));
                continue;
              }
              let failed = false;
              const handleOne = async (e: BatchedEvent) => {
                const meta: EventMeta = { msgId: e.id, subject: m.subject, deliveryCount: m.info.deliveryCount, traceparent: e.traceparent };
                const read = readEvent(event, e.data);
                try {
                  if (read.ok) await handler(read.data, meta);
                  else if (co.park) await co.park({ durable: co.durable, subject: m.subject, msgId: e.id, data: e.data, error: read.error });
                  else throw new Error(`event fails its schema and this consumer has no dead-letter table: ${read.error}`);
                } catch (err) {
                  failed = true;
                  log.warn({ err, subject: m.subject, msgId: e.id, deliveryCount: meta.deliveryCount }, read.ok ? 'event handler failed; will redeliver' : 'unreadable event not parked; will redeliver');
                }
              };
              await forEachLimited(events, co.concurrency ?? 1, handleOne, () => m.working());
              // a handler that failed gets its event again (with the rest of the message: handlers are
              // idempotent); an unreadable event is parked, never dropped (dead-letters.ts)
              if (failed) m.nak(redeliveryDelayMs(m.info.deliveryCount));
              else m.ack();
            }
          } catch (err) {
            if (!stopped) {
              log.warn({ err, durable: co.durable }, 'consumer interrupted; restarting');
              await new Promise((r) => setTimeout(r, 1_000));
            }
          }
        }
      };
      void loop();
      const stop = async () => {
        stopped = true;
        current?.stop();
      };
      stoppers.add(stop);
      return { stop };
    },

    broadcast(subject: string, payload: unknown): void {
      nc.publish(subject, encode(payload));
    },

    onBroadcast(subject: string, handler: (payload: unknown) => void, missed?: () => void): Subscription {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (!err) handler(decode(msg.data));
        },
      });
      subs.add(sub);
      // a wrapper of its own, so two subscriptions with the same callback stop apart
      const onGap = missed && (() => missed());
      if (onGap) gapListeners.add(onGap);
      return {
        async stop() {
          subs.delete(sub);
          if (onGap) gapListeners.delete(onGap);
          sub.unsubscribe();
        },
      };
    },

    async flush() {
      await nc.flush();
    },

    async close() {
      closed = true;
      clearTimeout(replicaRetry);
      for (const stop of stoppers) await stop();
      sends.flush();
      await nc.drain().catch(() => nc.close());
    },
  });
}
