import { request as httpRequest } from 'node:http';
import { createLogger, createPool } from '@tasksvc/runtime';
import { startReceiver, type Receiver } from '../../services/webhook/test/support.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, until } from '../testenv/index.ts';
import { startEmbedded, type EmbeddedProcess } from '../testenv/embedded.ts';
import { OTLP_KIND, renderTrace, startOtlpReceiver, type OtlpReceiver, type RecordedSpan } from '../testenv/otlp.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { startCluster, type Cluster } from './cluster.ts';

/**
 * OpenTelemetry traces of real processes (docs/observability.md#traces), exported over OTLP/HTTP
 * (JSON) to a receiver in this test: one task create is one trace from the gateway's HTTP span
 * through the bus request, the tasks handler and its SQL, the outbox row's publish by the relay, to
 * the webhook service's consumer and its delivery attempt, each span the child of the one before.
 * Both run modes: `npm start` (in-process bus, one process) and one process per service over NATS.
 */

interface System {
  url: string;
  databaseUrl: string;
  /** log output of the process that logged the request (the gateway's) */
  gatewayOutput(): string;
  /** service.name of the spans each service makes: its own name, or the one process's */
  serviceOf(name: 'gateway' | 'tasks' | 'webhook'): string;
}

/**
 * POST with the body sent `delayMs` after the headers: the server has routed the request by then, so
 * the body's events reach it from the socket, outside the context the request started in.
 */
function postWithLateBody(url: string, headers: Record<string, string>, body: string, delayMs: number): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: res.headers as Record<string, string> })));
    });
    req.on('error', reject);
    req.flushHeaders();
    setTimeout(() => req.end(body), delayMs);
  });
}

/**
 * Create a task (as a new user with a webhook) and wait for its delivery; `traceparent`: the
 * caller's, as a client would send it; `lateBody`: the body follows the headers after a pause.
 */
async function createTask(sys: System, rx: Receiver, opts: { traceparent?: string; lateBody?: boolean } = {}): Promise<string> {
  const delivered = rx.requests.length;
  const pool = createPool(sys.databaseUrl, createLogger('tracing-test', 'silent'));
  const { authorization } = await createUserWithApiKey(pool);
  await pool.end();
  const hook = await fetch(`${sys.url}/api/settings/webhooks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${rx.url}/hook`, events: ['task.created'] }),
  });
  expect(hook.status, await hook.text()).toBe(201);
  const headers = { authorization, 'content-type': 'application/json', ...(opts.traceparent ? { traceparent: opts.traceparent } : {}) };
  const body = JSON.stringify({ title: 'traced' });
  const created = opts.lateBody ? await postWithLateBody(`${sys.url}/api/tasks`, headers, body, 300) : await fetch(`${sys.url}/api/tasks`, { method: 'POST', headers, body });
  expect(created.status, await created.text()).toBe(201);
  // with tracing on, the request id the gateway answers with is the trace id
  const traceId = created.headers.get('x-request-id') ?? '';
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  await until(() => rx.requests.length > delivered, 'the webhook delivery', 60_000);
  return traceId;
}

/** The one span of the trace matching `pick` (exactly one, so a duplicated hop fails too). */
function only(spans: RecordedSpan[], what: string, pick: (s: RecordedSpan) => boolean): RecordedSpan {
  const hits = spans.filter(pick);
  expect(hits.map((s) => s.name), `${what} in the trace\n${renderTrace(spans)}`).toHaveLength(1);
  return hits[0]!;
}

async function assertOneTrace(sys: System, otlp: OtlpReceiver, traceId: string): Promise<void> {
  const inTrace = () => otlp.spans.filter((s) => s.traceId === traceId);
  // Spans arrive in batches from several processes: wait for the delivery attempt and for every
  // parent named in the trace (no span left pointing at one not exported yet).
  const spans = await until(
    () => {
      const all = inTrace();
      const ids = new Set(all.map((s) => s.spanId));
      const complete = all.some((s) => s.name === 'deliver webhook') && all.every((s) => s.parentSpanId === '' || ids.has(s.parentSpanId));
      return complete ? all : undefined;
    },
    'the trace to arrive complete at the OTLP receiver',
    60_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; spans of the trace so far: ${inTrace().map((s) => `${s.service}:${s.name}`).join(', ')}`);
  });
  expect(otlp.refused).toEqual([]);
  // the picture in docs/observability.md comes from here
  if (process.env.PRINT_TRACE) console.log(renderTrace(spans));
  const childOf = (parent: RecordedSpan) => (s: RecordedSpan) => s.parentSpanId === parent.spanId;

  const root = only(spans, 'one root', (s) => s.parentSpanId === '');
  expect([root.name, root.kind, root.service]).toEqual(['POST /api/tasks', OTLP_KIND.server, sys.serviceOf('gateway')]);
  expect(root.attributes['http.response.status_code']).toBe(201);

  const request = only(spans, 'the bus request', (s) => s.name === 'request tasks.http.create');
  expect([request.parentSpanId, request.kind, request.service]).toEqual([root.spanId, OTLP_KIND.client, sys.serviceOf('gateway')]);

  const handle = only(spans, 'the handler', (s) => s.name === 'handle tasks.http.create');
  expect([handle.parentSpanId, handle.kind, handle.service]).toEqual([request.spanId, OTLP_KIND.server, sys.serviceOf('tasks')]);

  // the handler's statement that writes the task and its outbox row
  const write = only(spans, 'the task insert', (s) => childOf(handle)(s) && String(s.attributes['db.query.text'] ?? '').includes('INSERT INTO "tasks".outbox'));
  expect([write.kind, write.service, write.attributes['db.system.name']]).toEqual([OTLP_KIND.client, sys.serviceOf('tasks'), 'postgresql']);

  // the relay publishes the row inside the trace its traceparent names: the handler's
  const publish = only(spans, 'the outbox publish', (s) => s.name === 'publish events.task.created');
  expect([publish.parentSpanId, publish.kind, publish.service]).toEqual([handle.spanId, OTLP_KIND.producer, sys.serviceOf('tasks')]);

  const consume = only(spans, 'the webhook consumer', (s) => s.name === 'process events.task.created' && s.attributes['messaging.consumer.group.name'] === 'webhook-deliveries');
  expect([consume.parentSpanId, consume.kind, consume.service]).toEqual([publish.spanId, OTLP_KIND.consumer, sys.serviceOf('webhook')]);
  const ingest = only(spans, 'the ingest statement', (s) => childOf(consume)(s) && /INSERT INTO "?webhook"?\."?events"?/.test(String(s.attributes['db.query.text'] ?? '')));
  expect(ingest.service).toBe(sys.serviceOf('webhook'));

  const deliver = only(spans, 'the delivery attempt', (s) => s.name === 'deliver webhook');
  expect([deliver.parentSpanId, deliver.kind, deliver.service, deliver.attributes['webhook.attempt']]).toEqual([consume.spanId, OTLP_KIND.client, sys.serviceOf('webhook'), 1]);
  // the attempt's own SQL (recording the outcome) is inside it
  expect(spans.some((s) => childOf(deliver)(s) && s.attributes['db.system.name'] === 'postgresql')).toBe(true);
  expect(spans.filter((s) => s.statusCode === 2).map((s) => s.name)).toEqual([]);

  // the request's log line names the trace
  const requestLine = () => sys.gatewayOutput().split('\n').find((l) => l.includes('"request completed"') && l.includes('"url":"/api/tasks"') && l.includes(traceId));
  // the log reaches stdout in chunks (runtime/logger.ts): wait for the line to arrive, not for a fixed time
  const line = await until(requestLine, 'the request log line', 10_000).catch(() => undefined);
  expect(line, sys.gatewayOutput().slice(-2_000)).toBeDefined();
  expect(JSON.parse(line!)).toMatchObject({ reqId: traceId, traceId });
}

describe('traces in the single-process mode (npm start)', () => {
  let otlp: OtlpReceiver;
  let rx: Receiver;
  let proc: EmbeddedProcess | undefined;
  let sys: System;

  beforeAll(async () => {
    [otlp, rx] = await Promise.all([startOtlpReceiver(), startReceiver()]);
    const databaseUrl = await testDatabase('tracing_embedded');
    proc = await startEmbedded({
      DATABASE_URL: databaseUrl,
      AUTH_SECRET: 'tracing-secret-tracing-secret-tracing-0',
      AUTH_TRUST_HOST: 'true',
      LOG_LEVEL: 'info',
      OUTBOUND_ALLOW_LIST: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    });
    sys = { url: proc.url, databaseUrl, gatewayOutput: () => proc!.output(), serviceOf: () => 'task-service' };
  }, 180_000);
  afterAll(async () => {
    await proc?.stop();
    await Promise.all([otlp?.close(), rx?.close()]);
  }, 60_000);

  it('one trace: gateway → bus → tasks → PostgreSQL → outbox relay → webhook consumer → delivery', async () => {
    await assertOneTrace(sys, otlp, await createTask(sys, rx));
  }, 120_000);

  it('a body arriving after the headers is read inside the request\'s trace (the handler joins it)', async () => {
    await assertOneTrace(sys, otlp, await createTask(sys, rx, { lateBody: true }));
  }, 120_000);

  it('a trace its caller did not sample leaves no span on any hop, and no hop starts a trace of its own', async () => {
    // Every new trace is sampled here (the default ratio 1), so a hop that lost the caller's "not
    // sampled" decision would start a sampled trace of its own and export it.
    const hops = () => ({
      handler: otlp.spans.filter((s) => s.name === 'handle tasks.http.create').length,
      publish: otlp.spans.filter((s) => s.name === 'publish events.task.created').length,
      consumer: otlp.spans.filter((s) => s.name === 'process events.task.created' && s.attributes['messaging.consumer.group.name'] === 'webhook-deliveries').length,
      delivery: otlp.spans.filter((s) => s.name === 'deliver webhook').length,
    });
    const before = hops();
    const unsampled = await createTask(sys, rx, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00' });
    expect(unsampled).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    // a sampled create after it: once its trace has arrived complete, spans the first one ended earlier have been exported too
    await assertOneTrace(sys, otlp, await createTask(sys, rx));
    expect(otlp.spans.filter((s) => s.traceId === unsampled).map((s) => s.name)).toEqual([]);
    const after = hops();
    expect({ handler: after.handler - before.handler, publish: after.publish - before.publish, consumer: after.consumer - before.consumer, delivery: after.delivery - before.delivery }).toEqual({ handler: 1, publish: 1, consumer: 1, delivery: 1 });
  }, 120_000);
});

describe('traces in the distributed mode (one process per service, NATS)', () => {
  let otlp: OtlpReceiver;
  let rx: Receiver;
  let cluster: Cluster | undefined;
  let sys: System;

  beforeAll(async () => {
    [otlp, rx] = await Promise.all([startOtlpReceiver(), startReceiver()]);
    cluster = await startCluster({ OUTBOUND_ALLOW_LIST: '127.0.0.1', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, LOG_LEVEL: 'info' });
    await cluster.ready(120_000);
    const c = cluster;
    sys = { url: c.url, databaseUrl: c.databaseUrl, gatewayOutput: () => c.output('gateway'), serviceOf: (name) => name };
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
    await Promise.all([otlp?.close(), rx?.close()]);
  }, 60_000);

  it('one trace across the processes, carried in NATS headers and the outbox row', async () => {
    await assertOneTrace(sys, otlp, await createTask(sys, rx));
  }, 120_000);
});
