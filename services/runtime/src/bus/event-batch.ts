import { createHash } from 'node:crypto';

/**
 * How the NATS transport carries several events in one JetStream message (docs/architecture.md, "Events
 * on the wire"). An outbox round publishes its rows in one turn of the event loop; one message per
 * row cost a publish, a PubAck, a delivery and an ack each, most of the message server's and much of
 * the services' work per event. Consecutive events of one subject go together as one message:
 *
 * - the header `Tasksvc-Batch` holds the number of events;
 * - the body is one JSON object per line, `{"id", "data", "traceparent"?}`, in publish order;
 * - the message id is a digest of the event ids, so re-publishing the same round is still dropped
 *   by JetStream; a round made up differently is not, and consumers are idempotent on each event's id.
 *
 * A lone event keeps the one-event form (its JSON body, its id as message id). Lines rather than a
 * JSON array, so a consumer of an older release fails to parse a batch and asks for it again later
 * (it would drop a message that merely failed its schema) until a current replica takes it.
 *
 * An event's marks (`EventDef.marks`) travel as one header per mark, `Tasksvc-Mark-<name>`, one
 * character per event of the message in order: `1` carries it, `0` does not. A consumer that needs
 * only one mark's events (`ConsumeOptions.marked`) acks a message without one `1` unread and parses
 * only the marked lines of a batch. A message without the header (a publisher of an older release)
 * says nothing: every event of it is read, as before. Older consumers ignore the header.
 */
export const BATCH_HEADER = 'Tasksvc-Batch';
/** Events per message at most: also the most a consumer's handlers get at once from one message. */
export const MAX_BATCH_EVENTS = 64;
/** Bytes of event bodies per message at most, well under nats-server's default 1 MiB payload limit. */
export const MAX_BATCH_BYTES = 256 * 1024;

export interface OutgoingEvent {
  subject: string;
  id: string;
  /** the event's checked payload as JSON */
  json: string;
  traceparent?: string | undefined;
  /** the event's marks by name, as its publisher worked them out */
  marks?: Readonly<Record<string, boolean>> | undefined;
}

export interface BatchedEvent {
  id: string;
  data: unknown;
  traceparent?: string | undefined;
}

/** Runs of one subject, in order, cut at MAX_BATCH_EVENTS and MAX_BATCH_BYTES (an event over the limit travels alone). */
export function groupForSending<T extends OutgoingEvent>(events: readonly T[]): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const e of events) {
    const full = current.length === MAX_BATCH_EVENTS || bytes + e.json.length > MAX_BATCH_BYTES;
    if (current.length > 0 && (current[0]!.subject !== e.subject || full)) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(e);
    bytes += e.json.length;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

export function encodeBatch(events: readonly OutgoingEvent[]): { body: string; msgId: string } {
  const lines = events.map((e) => `{"id":${JSON.stringify(e.id)},${e.traceparent ? `"traceparent":${JSON.stringify(e.traceparent)},` : ''}"data":${e.json}}`);
  const digest = createHash('sha256');
  for (const e of events) digest.update(e.id).update('\n');
  return { body: lines.join('\n'), msgId: `batch-${digest.digest('hex').slice(0, 40)}` };
}

/** The events of a batch body; throws when it is not one (a line that is not an object with a string id). `only`: the mark flags (markFlags), lines flagged `0` are not parsed. */
export function decodeBatch(body: string, only?: string): BatchedEvent[] {
  const lines = body.split('\n');
  // flags for another count of events are not this body's: read every line
  const skip = only !== undefined && only.length === lines.length ? only : undefined;
  const events: BatchedEvent[] = [];
  for (const [i, line] of lines.entries()) {
    if (skip?.[i] === '0') continue;
    const e = JSON.parse(line) as Partial<BatchedEvent> | null;
    if (typeof e !== 'object' || e === null || typeof e.id !== 'string') throw new Error(`line ${i + 1} of an event batch has no id`);
    events.push({ id: e.id, data: e.data, traceparent: typeof e.traceparent === 'string' ? e.traceparent : undefined });
  }
  return events;
}

/** The header that carries a mark's flags. */
export const markHeader = (name: string): string => `Tasksvc-Mark-${name}`;

/** The marks' headers of a message of these events: a mark every one of them was worked out for, its flags in order. */
export function markHeaders(events: readonly OutgoingEvent[]): [string, string][] {
  const first = events[0]?.marks;
  if (!first) return [];
  const out: [string, string][] = [];
  for (const name of Object.keys(first)) {
    let flags = '';
    for (const e of events) {
      const v = e.marks?.[name];
      if (v === undefined) break;
      flags += v ? '1' : '0';
    }
    if (flags.length === events.length) out.push([markHeader(name), flags]);
  }
  return out;
}

/**
 * A mark's flags as a message of `count` events carries them, or undefined when it says nothing
 * usable (no header: a publisher of an older release; a value of another length or with other
 * characters): then every event is read.
 */
export function markFlags(value: string | undefined, count: number): string | undefined {
  return value && value.length === count && /^[01]+$/.test(value) ? value : undefined;
}
