import { randomUUID } from 'node:crypto';
import { connect, headers as natsHeaders, nanos, type ConnectionOptions, type NatsConnection, type Subscription as NatsSub } from '@nats-io/transport-node';
import { anonymousServerProblem } from '../nats-auth.ts';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { AppError, EVENT_STREAM, EVENT_SUBJECTS, parseMessage, REQUEST_ID_HEADER, type EventDef, type Rpc } from '@tasksvc/proto';
import type { Logger } from '../logger.ts';
import { currentTraceparent } from '../tracing.ts';
import { handleRequest, unwrapReply, requestContext } from './envelope.ts';
import { instrumentBus } from './instrument.ts';
import type { Bus, ConsumeOptions, EventMeta, RequestOptions, ServeOptions, Subscription } from './types.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();
const encode = (v: unknown) => enc.encode(JSON.stringify(v ?? null));
const decode = (b: Uint8Array): unknown => (b.length === 0 ? undefined : JSON.parse(dec.decode(b)));

/** W3C trace context header (tracing on): requests and events carry the sender's span (tracing.ts). */
const TRACEPARENT = 'traceparent';

/** JetStream drops a re-published outbox id within this window (the relay retries well inside it). */
const DUPLICATE_WINDOW_MS = 15 * 60_000;
/** Events older than this leave the stream; consumers are expected to keep up far sooner. */
const EVENT_MAX_AGE_MS = 14 * 24 * 3_600_000;

function redeliveryDelayMs(deliveryCount: number): number {
  return Math.min(30_000, 500 * 2 ** Math.min(deliveryCount - 1, 6));
}

function translateRequestError(err: unknown, subject: string, timeoutMs: number): unknown {
  const e = err as { name?: string; message?: string; cause?: { name?: string }; isNoResponders?: () => boolean };
  if (e?.name === 'NoRespondersError' || e?.cause?.name === 'NoRespondersError' || e?.isNoResponders?.()) {
    return new AppError('SERVICE_UNAVAILABLE', `no service answers ${subject}`);
  }
  if (e?.name === 'TimeoutError' || e?.cause?.name === 'TimeoutError') return new AppError('TIMEOUT', `no reply on ${subject} within ${timeoutMs} ms`);
  if (e?.name === 'ClosedConnectionError' || e?.name === 'DrainingConnectionError') return new AppError('SERVICE_UNAVAILABLE', 'message bus unavailable');
  return err;
}

export interface NatsBusOptions {
  servers: string;
  name: string;
  log: Logger;
  /** authentication and TLS (nats-auth.ts) */
  connect?: Partial<ConnectionOptions>;
  requireAuthentication?: boolean;
}

/** The NATS transport: core request/reply with queue groups, JetStream for durable events. */
export async function createNatsBus(opts: NatsBusOptions): Promise<Bus> {
  const { log } = opts;
  const nc: NatsConnection = await connect({
    servers: opts.servers.split(',').map((s) => s.trim()),
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    pingInterval: 10_000,
    // Otherwise every request and JetStream publish builds two Error objects up front (stack traces
    // for a failure that almost never comes): ~10 % of the gateway's CPU under load. Errors keep
    // their types and messages; they only lose the line that started the operation.
    noAsyncTraces: true,
    ...opts.connect,
  });
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

  const js = jetstream(nc);
  let jsm: JetStreamManager | undefined;
  let streamReady: Promise<void> | undefined;
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
      };
      try {
        await jsm.streams.info(EVENT_STREAM);
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
    })().catch((err: unknown) => {
      streamReady = undefined;
      throw err;
    });
    return streamReady;
  };

  const subs = new Set<NatsSub>();
  const stoppers = new Set<() => Promise<void>>();

  return instrumentBus({
    kind: 'nats',

    async request<Req, Res>(rpc: Rpc<Req, Res>, payload: Req, ro: RequestOptions = {}): Promise<Res> {
      const checked = parseMessage(rpc.request, payload, `request for ${rpc.subject}`);
      const h = natsHeaders();
      h.set(REQUEST_ID_HEADER, ro.requestId ?? randomUUID());
      const traceparent = currentTraceparent();
      if (traceparent) h.set(TRACEPARENT, traceparent);
      const timeout = ro.timeoutMs ?? 10_000;
      try {
        const msg = await nc.request(rpc.subject, encode(checked), { timeout, headers: h });
        return unwrapReply(rpc, decode(msg.data));
      } catch (err) {
        throw translateRequestError(err, rpc.subject, timeout);
      }
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
            try {
              raw = decode(msg.data);
            } catch {
              msg.respond(encode({ ok: false, error: { code: 'BAD_REQUEST', message: 'request is not JSON' } }));
              return;
            }
            const envelope = await handleRequest(rpc, raw, handler, requestContext(requestId, log), { traceparent: msg.headers?.get(TRACEPARENT), transport: 'nats' });
            msg.respond(encode(envelope));
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
      await ensureStream();
      const traceparent = currentTraceparent();
      let headers;
      if (traceparent) {
        headers = natsHeaders();
        headers.set(TRACEPARENT, traceparent);
      }
      try {
        await js.publish(event.subject, encode(data), { msgID: msgId, timeout: 5_000, ...(headers ? { headers } : {}) });
      } catch (err) {
        throw new AppError('SERVICE_UNAVAILABLE', `event not stored: ${(err as Error).message}`);
      }
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
              const meta: EventMeta = {
                msgId: m.headers?.get('Nats-Msg-Id') || `${m.seq}`,
                subject: m.subject,
                deliveryCount: m.info.deliveryCount,
                traceparent: m.headers?.get(TRACEPARENT) || undefined,
              };
              try {
                const payload = parseMessage(event.schema, decode(m.data), `event ${m.subject}`);
                await handler(payload, meta);
                m.ack();
              } catch (err) {
                if (err instanceof AppError && err.code === 'VALIDATION_FAILED') {
                  log.error({ err, subject: m.subject, msgId: meta.msgId }, 'event fails its schema; terminating it');
                  m.term();
                } else {
                  log.warn({ err, subject: m.subject, msgId: meta.msgId, deliveryCount: meta.deliveryCount }, 'event handler failed; will redeliver');
                  m.nak(redeliveryDelayMs(meta.deliveryCount));
                }
              }
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
      for (const stop of stoppers) await stop();
      await nc.drain().catch(() => nc.close());
    },
  });
}
