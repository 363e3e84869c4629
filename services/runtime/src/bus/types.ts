import type { EventDef, Rpc } from '@tasksvc/proto';
import type { Logger } from '../logger.ts';

export interface RequestContext {
  requestId: string;
  log: Logger;
}

export interface RequestOptions {
  timeoutMs?: number;
  requestId?: string;
  /**
   * The payload is made of values already checked against this request schema's parts (the gateway's
   * call: each part parsed by the route's schema), so the caller's side does not check it again. The
   * serving side still checks whatever reaches it over the wire.
   */
  checked?: boolean;
}

export interface EventMeta {
  /** stable id of the event (the outbox id); consumers dedupe on it */
  msgId: string;
  subject: string;
  /** 1 on first delivery, higher on redelivery */
  deliveryCount: number;
  /** W3C traceparent the event was published in (tracing on): the consumer's span continues that trace */
  traceparent?: string | undefined;
}

export interface ServeOptions {
  /** queue group: replicas of one service share the load. Defaults to the subject's first token. */
  queue?: string;
}

export interface ConsumeOptions {
  /** durable consumer name: survives restarts; replicas with the same name share the work */
  durable: string;
  /** subject filter, may use `*` and `>` (default: the event's subject) */
  filter?: string;
  /** how long a delivery may take before it is redelivered */
  ackWaitMs?: number;
  /**
   * Events of one message handled at once (NATS carries an outbox round's events in few messages,
   * event-batch.ts): 1 (the default) hands them over one after another, in order.
   */
  concurrency?: number;
  /**
   * Where an event goes that fails the consumer's schema even read tolerantly (a release whose
   * contract this one cannot read): its service's dead-letter table (dead-letters.ts; the service
   * runtime sets it). Once it resolves the event counts as handled. Without it such an event is
   * delivered again later, never dropped.
   */
  park?: (e: UnreadableEvent) => Promise<void>;
  /**
   * The handler needs only the events that carry this mark (`EventDef.marks`): an event its publisher
   * marked as not carrying it is acknowledged without being decoded, checked or handed over (nor
   * parked, nor counted as consumed). An event whose publisher said nothing (a release before marks)
   * is read and handed over as before, so the handler still checks for itself.
   */
  marked?: string;
}

/** An event a consumer could not read, as it is parked. */
export interface UnreadableEvent {
  durable: string;
  subject: string;
  msgId: string;
  data: unknown;
  /** the schema's complaints, one line */
  error: string;
}

/** A durable consumer a service will register, declared before anything publishes (see createMemoryBus). */
export interface DurableDeclaration {
  durable: string;
  filter: string;
}

export interface Subscription {
  stop(): Promise<void>;
}

/**
 * One message bus, two transports (NATS and in-process) with identical semantics:
 * request/reply with schema checks on both ends, and durable at-least-once events.
 */
export interface Bus {
  readonly kind: 'nats' | 'memory';
  request<Req, Res>(rpc: Rpc<Req, Res>, payload: Req, opts?: RequestOptions): Promise<Res>;
  /**
   * The same request, its reply's data as JSON for a caller that only passes it on (the gateway
   * answering HTTP): checked against the reply schema by the serving side, not parsed again here.
   * Text in-process; over NATS the reply's own UTF-8 bytes, so they are neither decoded nor encoded again.
   */
  requestJson<Req>(rpc: Rpc<Req, unknown>, payload: Req, opts?: RequestOptions): Promise<string | Uint8Array>;
  serve<Req, Res>(rpc: Rpc<Req, Res>, handler: (payload: Req, ctx: RequestContext) => Promise<Res>, opts?: ServeOptions): Subscription;
  /** Durable publish; resolves once the event is stored (JetStream PubAck) or, in-process, handled. Duplicate msgIds are dropped. */
  publish<T>(event: EventDef<T>, payload: T, msgId: string): Promise<void>;
  /** Durable consumer. A handler that throws gets the message again later. */
  consume<T>(event: EventDef<T>, handler: (payload: T, meta: EventMeta) => Promise<void>, opts: ConsumeOptions): Promise<Subscription>;
  /** Fire-and-forget signal to every live subscriber (not durable). */
  broadcast(subject: string, payload: unknown): void;
  /**
   * `missed`, when given, runs whenever broadcasts may have been lost (NATS: the connection dropped or
   * came back); a subscriber that keeps state from broadcasts drops it then. The in-process bus loses none.
   */
  onBroadcast(subject: string, handler: (payload: unknown) => void, missed?: () => void): Subscription;
  /** Resolves once every subscription made so far is active at the server (NATS); call before reporting ready. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
