import { randomUUID } from 'node:crypto';
import { AppError, parseMessage, type EventDef, type Rpc } from '@tasksvc/proto';
import type { Logger } from '../logger.ts';
import { handleRequest, subjectMatches, unwrapReply } from './envelope.ts';
import type { Bus, ConsumeOptions, EventMeta, RequestContext, RequestOptions, ServeOptions, Subscription } from './types.ts';

type RawHandler = (raw: unknown, ctx: RequestContext) => Promise<unknown>;
type RawConsumer = (raw: unknown, meta: EventMeta) => Promise<void>;

interface Durable {
  filter: string;
  members: RawConsumer[];
  next: number;
  /** msgIds this durable has handled, for JetStream-like duplicate suppression */
  seen: Set<string>;
}

const SEEN_LIMIT = 100_000;

/**
 * The in-process transport for the single-process mode. Messages go through a JSON round trip
 * so that anything that would not survive the wire fails here too.
 */
export function createMemoryBus(log: Logger): Bus {
  const handlers = new Map<string, { list: RawHandler[]; next: number }>();
  const durables = new Map<string, Durable>();
  const listeners = new Map<string, Set<(p: unknown) => void>>();
  let closed = false;

  const wire = <T>(v: T): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

  return {
    kind: 'memory',

    async request<Req, Res>(rpc: Rpc<Req, Res>, payload: Req, opts: RequestOptions = {}): Promise<Res> {
      if (closed) throw new AppError('SERVICE_UNAVAILABLE', 'bus closed');
      const checked = parseMessage(rpc.request, payload, `request for ${rpc.subject}`);
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
        const envelope = await Promise.race([handler(wire(checked), { requestId, log: log.child({ requestId }) }), timeout]);
        return unwrapReply(rpc, wire(envelope));
      } finally {
        clearTimeout(timer);
      }
    },

    serve<Req, Res>(rpc: Rpc<Req, Res>, handler: (payload: Req, ctx: RequestContext) => Promise<Res>, _opts?: ServeOptions): Subscription {
      const raw: RawHandler = (payload, ctx) => handleRequest(rpc, payload, handler, ctx);
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
      const data = wire(parseMessage(event.schema, payload, `event ${event.subject}`));
      // Every matching durable must have handled it before the publish counts as stored; a failure
      // rejects, so the publisher (the outbox relay) retries, and durables that already handled it skip it.
      for (const d of durables.values()) {
        if (!subjectMatches(d.filter, event.subject) || d.seen.has(msgId) || d.members.length === 0) continue;
        const member = d.members[d.next++ % d.members.length]!;
        await member(data, { msgId, subject: event.subject, deliveryCount: 1 });
        d.seen.add(msgId);
        if (d.seen.size > SEEN_LIMIT) d.seen.delete(d.seen.values().next().value as string);
      }
    },

    async consume<T>(event: EventDef<T>, handler: (payload: T, meta: EventMeta) => Promise<void>, opts: ConsumeOptions): Promise<Subscription> {
      const filter = opts.filter ?? event.subject;
      const member: RawConsumer = async (raw, meta) => handler(parseMessage(event.schema, raw, `event ${meta.subject}`), meta);
      const d = durables.get(opts.durable) ?? { filter, members: [], next: 0, seen: new Set<string>() };
      d.members.push(member);
      durables.set(opts.durable, d);
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
    },
  };
}
