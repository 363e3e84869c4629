import { AppError, isErrorCode, issuesFromZod, parseMessage, tolerant, type ErrorBody, type EventDef, type ReplyEnvelope, type Rpc } from '@tasksvc/proto';
import { databaseUnavailable } from '../db/availability.ts';
import type { Logger } from '../logger.ts';
import { busMetrics, outcomeOfCode } from '../metrics.ts';
import { openSpan, withSpan } from '../tracing.ts';
import type { RequestContext } from './types.ts';

/** A handler's context; its logger (a child naming the request) is made only when the handler logs. */
export function requestContext(requestId: string, parent: Logger): RequestContext {
  let log: Logger | undefined;
  return {
    requestId,
    get log() {
      return (log ??= parent.child({ requestId }));
    },
  };
}

/** Run a handler for one request and wrap its outcome in the wire envelope (shared by both transports). */
export async function handleRequest<Req, Res>(
  rpc: Rpc<Req, Res>,
  raw: unknown,
  handler: (payload: Req, ctx: RequestContext) => Promise<Res>,
  ctx: RequestContext,
  opts: { checked?: boolean; /** the caller's trace (a NATS header); in-process the caller's context is already active */ traceparent?: string | null; transport?: string } = {},
): Promise<ReplyEnvelope<Res>> {
  const t0 = performance.now();
  const span = openSpan(`handle ${rpc.subject}`, 'server', { 'messaging.system': opts.transport, 'messaging.destination.name': rpc.subject }, { parent: opts.traceparent });
  const envelope = await withSpan(span, () => answer(rpc, raw, handler, ctx, opts.checked));
  const outcome = envelope.ok ? 'ok' : outcomeOfCode(envelope.error.code);
  busMetrics.handled.observe({ subject: rpc.subject, outcome }, (performance.now() - t0) / 1000);
  if (span) {
    span.span.setAttribute('tasksvc.outcome', outcome);
    // a rejected request is the caller's mistake, not a failure of this span
    span.end(envelope.ok || outcome === 'rejected' ? undefined : envelope.error.code);
  }
  return envelope;
}

async function answer<Req, Res>(rpc: Rpc<Req, Res>, raw: unknown, handler: (payload: Req, ctx: RequestContext) => Promise<Res>, ctx: RequestContext, checked?: boolean): Promise<ReplyEnvelope<Res>> {
  let envelope: ReplyEnvelope<Res>;
  try {
    // in-process, the caller has already checked the request against the same schema; what arrives
    // over the wire is read tolerantly (a caller of another release may add or leave out keys)
    const payload = checked ? (raw as Req) : parseMessage(tolerant(rpc.request), raw, `request for ${rpc.subject}`);
    const result = await handler(payload, ctx);
    const reply = rpc.reply.safeParse(result);
    // A reply that breaks its own contract is this service's bug, never the caller's.
    if (!reply.success) throw new Error(`reply of ${rpc.subject} breaks its schema: ${reply.error.message}`);
    envelope = { ok: true, data: reply.data };
  } catch (err) {
    envelope = { ok: false, error: toErrorBody(err, ctx.log, rpc.subject) };
  }
  return envelope;
}

/**
 * PostgreSQL errors that can only come from the caller's values (class 22 data exceptions,
 * constraint violations) are the caller's mistake: a 4xx, never a 5xx. Services should validate
 * first; this is the safety net.
 */
function fromPostgres(err: unknown): ErrorBody | undefined {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (code.startsWith('22')) return { code: 'VALIDATION_FAILED', message: 'a value is malformed or out of range' };
  if (code === '23505') return { code: 'CONFLICT', message: 'that already exists' };
  if (code === '23503') return { code: 'VALIDATION_FAILED', message: 'a referenced item does not exist' };
  if (code === '23514' || code === '23502') return { code: 'VALIDATION_FAILED', message: 'a value breaks a rule' };
  return undefined;
}

export function toErrorBody(err: unknown, log: Logger, subject: string): ErrorBody {
  if (err instanceof AppError) return err.retryAfterSeconds === undefined ? err.toBody() : { ...err.toBody(), retryAfterSeconds: err.retryAfterSeconds };
  if (databaseUnavailable(err)) {
    log.warn({ err, subject }, 'database unavailable');
    return { code: 'DATABASE_UNAVAILABLE', message: 'the database is unavailable; try again shortly' };
  }
  const mapped = fromPostgres(err);
  if (mapped) {
    log.warn({ err, subject }, 'database refused a value');
    return mapped;
  }
  log.error({ err, subject }, 'handler failed');
  return { code: 'INTERNAL', message: 'internal error' };
}

/**
 * Unwrap a reply envelope on the caller's side, reading the reply tolerantly (contracts.ts). A reply
 * this release still cannot read is the answering side's problem, not the caller's input: an
 * INTERNAL error naming the subject and the fields, never a 400.
 */
export function unwrapReply<Res>(rpc: Rpc<unknown, Res>, envelope: unknown, opts: { checked?: boolean } = {}): Res {
  const env = envelope as ReplyEnvelope<unknown> | undefined;
  if (!env || typeof env !== 'object' || typeof env.ok !== 'boolean') throw new AppError('INTERNAL', `malformed reply on ${rpc.subject}`);
  // in-process, handleRequest has just produced env.data from rpc.reply itself
  if (env.ok) {
    if (opts.checked) return env.data as Res;
    const r = tolerant(rpc.reply).safeParse(env.data);
    if (!r.success) throw new AppError('INTERNAL', `the reply of ${rpc.subject} does not match this release's contract (is the answering service of another release?): ${describeIssues(r.error.issues)}`);
    return r.data;
  }
  const code = isErrorCode(env.error?.code) ? env.error.code : 'INTERNAL';
  const retryAfterSeconds = env.error?.retryAfterSeconds;
  throw new AppError(code, env.error?.message ?? 'error', env.error?.issues, Number.isInteger(retryAfterSeconds) && retryAfterSeconds! > 0 ? { retryAfterSeconds } : {});
}

/**
 * How an ok envelope starts on the wire: `envelopeJson` writes it so, whatever the data, and a caller
 * that only passes the data on (the gateway, `requestJson`) takes it from there without parsing it.
 */
const OK_PREFIX = '{"ok":true,"data":';
const OK_PREFIX_BYTES = new TextEncoder().encode(OK_PREFIX);
/** `}`, the last byte of every envelope */
const CLOSE_BRACE = 0x7d;

/** A reply envelope as JSON text (what a NATS reply carries). */
export function envelopeJson(envelope: ReplyEnvelope<unknown>): string {
  return envelope.ok && envelope.data !== undefined ? `${OK_PREFIX}${JSON.stringify(envelope.data)}}` : JSON.stringify(envelope);
}

function startsWithOkPrefix(bytes: Uint8Array): boolean {
  if (bytes.length <= OK_PREFIX_BYTES.length) return false;
  for (let i = 0; i < OK_PREFIX_BYTES.length; i++) if (bytes[i] !== OK_PREFIX_BYTES[i]) return false;
  return true;
}

/**
 * The data of a reply envelope (its UTF-8 bytes, as a NATS reply carries them) as JSON bytes, as the
 * serving side wrote them: a view of the same memory, neither decoded nor copied. That side has checked
 * it against the reply schema (handleRequest), so it is passed on unparsed; an error envelope throws its
 * AppError as unwrapReply does, and anything else is parsed and checked here.
 */
export function replyDataJson(rpc: Rpc<unknown, unknown>, bytes: Uint8Array): Uint8Array {
  if (startsWithOkPrefix(bytes) && bytes[bytes.length - 1] === CLOSE_BRACE) return bytes.subarray(OK_PREFIX_BYTES.length, -1);
  let envelope: unknown;
  try {
    envelope = bytes.length === 0 ? undefined : JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch {
    throw new AppError('INTERNAL', `malformed reply on ${rpc.subject}`);
  }
  return Buffer.from(JSON.stringify(unwrapReply(rpc, envelope) ?? null));
}

/** `*` matches one token, `>` the rest (NATS semantics). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== '*' && f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

/** A schema's complaints as one line: each field path with its problem. */
export function describeIssues(issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>): string {
  return issuesFromZod(issues)
    .map((i) => `${i.path}: ${i.message}`)
    .join('; ');
}

/** An event as its consumer reads it: tolerantly (contracts.ts), or why it cannot be read. */
export function readEvent<T>(event: EventDef<T>, raw: unknown): { ok: true; data: T } | { ok: false; error: string } {
  const r = tolerant(event.schema).safeParse(raw);
  return r.success ? { ok: true, data: r.data } : { ok: false, error: describeIssues(r.error.issues) };
}
