import { z } from 'zod';
import { issuesFromZod, AppError, type ErrorBody } from './errors.ts';

/** A request/reply contract: one subject, the request it takes and the reply it gives. */
export interface Rpc<Req, Res> {
  readonly subject: string;
  readonly request: z.ZodType<Req>;
  readonly reply: z.ZodType<Res>;
}

/** A durable event contract. Subjects live under `events.` so one JetStream stream holds them all. */
export interface EventDef<T> {
  readonly subject: string;
  readonly schema: z.ZodType<T>;
  /**
   * Facts about an event, by name, that a consumer may need alone (`ConsumeOptions.marked`): the
   * publisher works each out from the payload and sends it beside the event (over NATS a header,
   * docs/architecture.md "Events on the wire"), so that consumer skips the others without reading them.
   */
  readonly marks?: Readonly<Record<string, EventMark<T>>>;
}

/** A method's type, so an EventDef of a payload type is still an EventDef<unknown> (a relay's list). */
export type EventMark<T> = { mark(payload: T): boolean }['mark'];

/**
 * Whether an event carries a mark, as its consumer is told. A mark that cannot be worked out from
 * the payload (one the schema would refuse, such as null, makes it throw) counts as carried: the
 * consumer then reads the event and parks what it cannot read, as it would with no mark at all.
 */
export function carriesMark<T>(event: EventDef<T>, name: string, payload: T): boolean {
  const mark = event.marks?.[name];
  if (!mark) return true;
  try {
    return mark(payload);
  } catch {
    return true;
  }
}

/** Every mark of an event by name (undefined for an event without marks), for the wire. */
export function eventMarks<T>(event: EventDef<T>, payload: T): Record<string, boolean> | undefined {
  if (!event.marks) return undefined;
  const marks: Record<string, boolean> = {};
  for (const name of Object.keys(event.marks)) marks[name] = carriesMark(event, name, payload);
  return marks;
}

export function defineRpc<Req, Res>(subject: string, request: z.ZodType<Req>, reply: z.ZodType<Res>): Rpc<Req, Res> {
  return { subject, request, reply };
}

export function defineEvent<T>(subject: string, schema: z.ZodType<T>, opts: { marks?: EventDef<T>['marks'] } = {}): EventDef<T> {
  if (!subject.startsWith('events.')) throw new Error(`event subject must start with "events.": ${subject}`);
  for (const name of Object.keys(opts.marks ?? {})) if (!/^[a-z][a-z0-9-]*$/.test(name)) throw new Error(`an event mark's name is lower case letters, digits and dashes: ${name}`);
  return opts.marks ? { subject, schema, marks: opts.marks } : { subject, schema };
}

/** The stream that carries every durable event. */
export const EVENT_STREAM = 'EVENTS';
export const EVENT_SUBJECTS = 'events.>';

/** Wire envelope of every reply. */
export type ReplyEnvelope<T> = { ok: true; data: T } | { ok: false; error: ErrorBody };

export const REQUEST_ID_HEADER = 'x-request-id';

/** Validate a message against its schema; a failure is a BAD_REQUEST naming each field. */
export function parseMessage<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new AppError('VALIDATION_FAILED', `invalid ${what}`, issuesFromZod(r.error.issues));
  return r.data;
}

/** Every service answers `svc.<name>.ping` so the gateway can tell which services are up. */
export const pingReply = z.object({ service: z.string(), version: z.string(), instance: z.string(), uptimeSeconds: z.number() });
export type PingReply = z.infer<typeof pingReply>;
export function pingRpc(service: string): Rpc<Record<string, never>, PingReply> {
  return defineRpc(`svc.${service}.ping`, z.object({}).strict() as z.ZodType<Record<string, never>>, pingReply);
}

export const SERVICE_NAMES = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

// ---- Parked events (dead letters) -------------------------------------------------------------

/**
 * An event one of this service's consumers could not read (it fails the consumer's schema even read
 * tolerantly): kept in the service's `dead_letters` table until it is replayed. What the admin page
 * lists: where and why, never the payload (it holds user data).
 */
export const parkedEvent = z.object({
  id: z.uuid(),
  /** the durable consumer that parked it */
  durable: z.string(),
  subject: z.string(),
  /** the event's id (the outbox id) */
  msgId: z.string(),
  /** why it could not be read (or, after a replay, why it still cannot) */
  error: z.string(),
  /** deliveries and replays that failed */
  attempts: z.number().int(),
  parkedAt: z.string(),
  lastTriedAt: z.string().nullable(),
});
export type ParkedEvent = z.infer<typeof parkedEvent>;

export const deadLettersReply = z.object({ service: z.string(), total: z.number().int(), events: z.array(parkedEvent) });
export type DeadLettersReply = z.infer<typeof deadLettersReply>;
/** `svc.<name>.dead-letters`: the events this service has parked (the oldest first, at most `limit`). */
export function deadLettersRpc(service: string): Rpc<{ limit?: number | undefined }, DeadLettersReply> {
  return defineRpc(`svc.${service}.dead-letters`, z.object({ limit: z.number().int().min(1).max(500).optional() }), deadLettersReply);
}

export const replayReply = z.object({
  service: z.string(),
  /** handled by the consumer now and removed from the table */
  replayed: z.number().int(),
  /** still unreadable (or their handler failed): kept, with the reason */
  stillParked: z.array(z.object({ id: z.string(), error: z.string() })),
});
export type ReplayReply = z.infer<typeof replayReply>;
/** `svc.<name>.dead-letters.replay`: hand parked events (all, or those named) to the consumer again. */
export function replayDeadLettersRpc(service: string): Rpc<{ ids?: string[] | undefined }, ReplayReply> {
  return defineRpc(`svc.${service}.dead-letters.replay`, z.object({ ids: z.array(z.uuid()).max(500).optional() }), replayReply);
}
