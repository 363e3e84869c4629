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
}

export function defineRpc<Req, Res>(subject: string, request: z.ZodType<Req>, reply: z.ZodType<Res>): Rpc<Req, Res> {
  return { subject, request, reply };
}

export function defineEvent<T>(subject: string, schema: z.ZodType<T>): EventDef<T> {
  if (!subject.startsWith('events.')) throw new Error(`event subject must start with "events.": ${subject}`);
  return { subject, schema };
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
