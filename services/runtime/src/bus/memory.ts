import { randomUUID } from 'node:crypto';
import { AppError, carriesMark, parseMessage, type EventDef, type Rpc } from '@tasksvc/proto';
import type { Logger } from '../logger.ts';
import { currentTraceparent } from '../tracing.ts';
import { handleRequest, readEvent, subjectMatches, unwrapReply, requestContext } from './envelope.ts';
import { instrumentBus } from './instrument.ts';
import type { Bus, ConsumeOptions, DurableDeclaration, EventMeta, RequestContext, RequestOptions, ServeOptions, Subscription } from './types.ts';

/** A served handler; `checked` says the caller has already checked the request against this very schema. */
type RawHandler = { rpc: Rpc<unknown, unknown>; run: (raw: unknown, ctx: RequestContext, checked: boolean) => Promise<unknown> };
interface RawConsumer {
  run(raw: unknown, meta: EventMeta): Promise<void>;
  /** the one mark whose events it needs (ConsumeOptions.marked) */
  marked?: string | undefined;
}

interface Durable {
  filter: string;
  members: RawConsumer[];
  next: number;
  /** msgIds this durable has handled, for JetStream-like duplicate suppression */
  seen: Set<string>;
  /** publishes waiting for the first member of a declared durable */
  waiting: { resolve: () => void; reject: (err: Error) => void }[];
}

const SEEN_LIMIT = 100_000;
/** How long a publish waits for a durable's consumer before failing (the relay retries it later). */
const PUBLISH_WAIT_MS = 5_000;

/**
 * The in-process transport for the single-process mode. Requests are checked against their schema
 * once on each side (as over NATS) but not copied: the reply the handler's schema produced is
 * handed to the caller as is.
 *
 * Events keep JetStream's contract for every durable declared up front (`opts.durables`): a
 * publish resolves only once each declared durable matching the subject has handled the event,
 * waiting for a declared durable whose consumer has not registered yet. So the outbox relay marks
 * a row published only when every consumer has it, and a crash before that re-publishes it.
 */
export function createMemoryBus(log: Logger, opts: { durables?: DurableDeclaration[] } = {}): Bus {
  const handlers = new Map<string, { list: RawHandler[]; next: number }>();
  const durables = new Map<string, Durable>();
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  let closed = false;

  const durable = (name: string, filter: string): Durable => {
    const existing = durables.get(name);
    if (existing) {
      if (existing.filter !== filter) throw new Error(`durable ${name} is declared for ${existing.filter}, not ${filter}`);
      return existing;
    }
    const d: Durable = { filter, members: [], next: 0, seen: new Set<string>(), waiting: [] };
    durables.set(name, d);
    return d;
  };
  for (const decl of opts.durables ?? []) durable(decl.durable, decl.filter);

  /** Wait (like a JetStream publish waits for its PubAck) until the durable has a consumer. */
  const memberOf = async (name: string, d: Durable): Promise<RawConsumer> => {
    while (d.members.length === 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve, reject) => {
        const w = { resolve, reject };
        d.waiting.push(w);
        timer = setTimeout(() => {
          d.waiting = d.waiting.filter((x) => x !== w);
          reject(new AppError('SERVICE_UNAVAILABLE', `event not stored: durable ${name} has no consumer yet`));
        }, PUBLISH_WAIT_MS);
      }).finally(() => clearTimeout(timer));
    }
    return d.members[d.next++ % d.members.length]!;
  };

  const wire = <T>(v: T): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

  async function request<Req, Res>(rpc: Rpc<Req, Res>, payload: Req, opts: RequestOptions = {}): Promise<Res> {
    if (closed) throw new AppError('SERVICE_UNAVAILABLE', 'bus closed');
    const checked = opts.checked ? payload : parseMessage(rpc.request, payload, `request for ${rpc.subject}`);
    const entry = handlers.get(rpc.subject);
    if (!entry || entry.list.length === 0) throw new AppError('SERVICE_UNAVAILABLE', `no service answers ${rpc.subject}`);
    const handler = entry.list[entry.next++ % entry.list.length]!;
    const requestId = opts.requestId ?? randomUUID();
    const timeoutMs = opts.timeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AppError('TIMEOUT', `no reply on ${rpc.subject} within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      // one schema check per side, as over NATS, except where both sides hold the same schema
      const ctx = requestContext(requestId, log);
      const envelope = await Promise.race([handler.run(checked, ctx, handler.rpc.request === rpc.request), timeout]);
      return unwrapReply(rpc, envelope, { checked: handler.rpc.reply === rpc.reply });
    } finally {
      clearTimeout(timer);
    }
  }

  return instrumentBus({
    kind: 'memory',

    request,

    async requestJson<Req>(rpc: Rpc<Req, unknown>, payload: Req, opts?: RequestOptions): Promise<string> {
      // the handler's reply is checked and shared, not copied: written out once, as an HTTP answer would be
      return JSON.stringify((await request(rpc, payload, opts)) ?? null);
    },

    serve<Req, Res>(rpc: Rpc<Req, Res>, handler: (payload: Req, ctx: RequestContext) => Promise<Res>, _opts?: ServeOptions): Subscription {
      // the handler runs in the caller's async context, so its span is a child of the caller's without a header
      const raw: RawHandler = { rpc: rpc, run: (payload, ctx, checked) => handleRequest(rpc, payload, handler, ctx, { checked, transport: 'memory' }) };
      const entry = handlers.get(rpc.subject) ?? { list: [], next: 0 };
      entry.list.push(raw);
      handlers.set(rpc.subject, entry);
      return {
        async stop() {
          entry.list = entry.list.filter((h) => h !== raw);
        },
      };
    },

    async publish<T>(event: EventDef<T>, payload: T, msgId: string): Promise<void> {
      if (closed) throw new AppError('SERVICE_UNAVAILABLE', 'bus closed');
      // carried like the NATS header (a consumer's span continues the publisher's trace)
      const traceparent = currentTraceparent() ?? undefined;
      // Every matching durable must have handled it before the publish counts as stored; a failure
      // rejects, so the publisher (the outbox relay) retries, and durables that already handled it skip it.
      // Each member checks the event against the schema as it takes it (see consume), so the publish
      // checks it itself only when no member does.
      let checked = false;
      for (const [name, d] of durables) {
        if (!subjectMatches(d.filter, event.subject) || d.seen.has(msgId)) continue;
        const member = await memberOf(name, d);
        // an event without the mark its consumer needs is not read there (as over NATS)
        if (member.marked === undefined || carriesMark(event, member.marked, payload)) {
          await member.run(payload, { msgId, subject: event.subject, deliveryCount: 1, traceparent });
          checked = true;
        }
        d.seen.add(msgId);
        if (d.seen.size > SEEN_LIMIT) d.seen.delete(d.seen.values().next().value as string);
      }
      if (!checked) parseMessage(event.schema, payload, `event ${event.subject}`);
    },

    async consume<T>(event: EventDef<T>, handler: (payload: T, meta: EventMeta) => Promise<void>, opts: ConsumeOptions): Promise<Subscription> {
      // each member parses for itself, so no consumer sees another's (or the publisher's) object; what
      // it cannot read is parked (dead-letters.ts), or else the publish fails and the relay retries it
      const member: RawConsumer = {
        marked: opts.marked,
        async run(raw, meta) {
          const read = readEvent(event, raw);
          if (read.ok) return handler(read.data, meta);
          if (!opts.park) throw new AppError('VALIDATION_FAILED', `event ${meta.subject} fails the schema of durable ${opts.durable}: ${read.error}`);
          await opts.park({ durable: opts.durable, subject: meta.subject, msgId: meta.msgId, data: raw, error: read.error });
        },
      };
      const d = durable(opts.durable, opts.filter ?? event.subject);
      d.members.push(member);
      for (const w of d.waiting.splice(0)) w.resolve();
      return {
        async stop() {
          d.members = d.members.filter((m) => m !== member);
        },
      };
    },

    broadcast(subject: string, payload: unknown): void {
      for (const [filter, set] of listeners) if (subjectMatches(filter, subject)) for (const fn of set) queueMicrotask(() => fn(wire(payload)));
    },

    onBroadcast(subject: string, handler: (payload: unknown) => void): Subscription {
      const set = listeners.get(subject) ?? new Set();
      set.add(handler);
      listeners.set(subject, set);
      return {
        async stop() {
          set.delete(handler);
        },
      };
    },

    async flush() {},

    async close() {
      closed = true;
      for (const d of durables.values()) for (const w of d.waiting.splice(0)) w.reject(new AppError('SERVICE_UNAVAILABLE', 'bus closed'));
    },
  });
}
