import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as Api from '@opentelemetry/api';
import type { Config } from './config.ts';
import { VERSION } from './version.ts';

/**
 * Distributed tracing (docs/observability.md#traces): OpenTelemetry with the OTLP/HTTP exporter,
 * on only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
 *
 * Off, nothing of OpenTelemetry is loaded, not even its API: `api` stays undefined and every helper
 * below is one branch that calls straight through. So the hot paths (bus, pool, gateway) pay nothing.
 * On, the SDK is imported once per process by `startTracing`, which registers the AsyncLocalStorage
 * context manager and the W3C trace-context propagator; the helpers then open spans in the active
 * context and carry `traceparent` across the bus and through outbox rows.
 */
let api: typeof Api | undefined;
let tracer: Api.Tracer | undefined;

export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface Tracing {
  /** export what is still buffered and stop (call last on shutdown) */
  shutdown(): Promise<void>;
}

/** True once `startTracing` has loaded the SDK in this process. */
export function tracingOn(): boolean {
  return tracer !== undefined;
}

/**
 * Load the SDK and register it globally for this process, exporting to
 * `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces` (OTLP/HTTP, JSON). `service` is the resource's
 * service.name: the service's own name, or `task-service` for the single process of `npm start`.
 * Undefined (and nothing loaded) without an endpoint.
 */
export async function startTracing(config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_TRACES_SAMPLER_ARG'>, service: string): Promise<Tracing | undefined> {
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return undefined;
  if (tracer) throw new Error('tracing is already started in this process');
  const [otel, sdk, resources, core, hooks, otlp] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': service, 'service.version': VERSION }),
    // a trace started upstream keeps its caller's decision; new ones are sampled at the configured ratio
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLER_ARG) }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new otlp.OTLPTraceExporter({ url: `${endpoint}/v1/traces` }) })],
  });
  otel.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  otel.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  otel.trace.setGlobalTracerProvider(provider);
  api = otel;
  tracer = provider.getTracer('tasksvc', VERSION);
  return {
    async shutdown() {
      await provider.shutdown().catch(() => undefined);
    },
  };
}

const KINDS: Record<SpanKindName, keyof typeof Api.SpanKind> = { server: 'SERVER', client: 'CLIENT', producer: 'PRODUCER', consumer: 'CONSUMER', internal: 'INTERNAL' };

/** The context a `traceparent` names (the active one when there is none, or it is malformed). */
function contextOf(traceparent: string | null | undefined): Api.Context {
  const active = api!.context.active();
  return traceparent ? api!.propagation.extract(active, { traceparent }) : active;
}

/**
 * A started span; `end` records the error (if any) as the span's status. Undefined when tracing is off.
 * In a trace that is not sampled, `sampled` is false and `span` is the trace's own non-recording one:
 * nothing was started, `context` only carries the decision on, and `end` does nothing.
 */
export interface OpenSpan {
  readonly span: Api.Span;
  readonly context: Api.Context;
  readonly sampled: boolean;
  end(err?: unknown): void;
}

const sampled = (span: Api.Span) => (span.spanContext().traceFlags & api!.TraceFlags.SAMPLED) !== 0;

/** The span `context` carries when its trace was decided against sampling (no span of it is ever exported). */
function unsampledSpan(context: Api.Context): Api.Span | undefined {
  const span = api!.trace.getSpan(context);
  return span && !sampled(span) ? span : undefined;
}

/**
 * Whether the active context is inside a sampled trace: code that would only add a child span (the
 * pool's statements) asks this first, so statements of background loops (no trace) and of unsampled
 * traces cost nothing.
 */
export function inSampledTrace(): boolean {
  if (!tracer) return false;
  const span = api!.trace.getSpan(api!.context.active());
  return span !== undefined && sampled(span);
}

const noEnd = () => undefined;

/**
 * Start a span without making it active (for code that ends it in a callback, like an HTTP
 * response). `parent`: a traceparent to continue (from a bus header or an outbox row); otherwise the
 * active context. Inside a trace that is not sampled nothing is started: every hop of such a trace
 * (most of them, at a low OTEL_TRACES_SAMPLER_ARG) passes its context on and pays no more.
 */
export function openSpan(name: string, kind: SpanKindName, attributes: SpanAttributes, opts: { parent?: string | null } = {}): OpenSpan | undefined {
  if (!tracer) return undefined;
  const parent = contextOf(opts.parent);
  const unsampled = unsampledSpan(parent);
  if (unsampled) return { span: unsampled, context: parent, sampled: false, end: noEnd };
  const span = tracer.startSpan(name, { kind: api!.SpanKind[KINDS[kind]], attributes }, parent);
  const context = api!.trace.setSpan(parent, span);
  return {
    span,
    context,
    // false for a new trace the sampler dropped: its non-recording span carries the decision
    sampled: span.isRecording(),
    end(err?: unknown) {
      if (err !== undefined) {
        const message = err instanceof Error ? err.message : typeof err === 'string' ? err : 'failed';
        span.recordException(err instanceof Error ? err : message);
        span.setStatus({ code: api!.SpanStatusCode.ERROR, message });
      }
      span.end();
    },
  };
}

/** Run `fn` inside a new active span that ends when it settles (a rejection marks it failed). Off: just `fn()`. */
export function inSpan<T>(name: string, kind: SpanKindName, attributes: SpanAttributes, fn: () => Promise<T>, opts: { parent?: string | null } = {}): Promise<T> {
  const s = openSpan(name, kind, attributes, opts);
  if (!s) return fn();
  // not sampled: only the decision is carried on (a root the sampler dropped starts that context)
  if (!s.sampled) return api!.context.with(s.context, fn);
  return api!.context.with(s.context, fn).then(
    (v) => {
      s.end();
      return v;
    },
    (err: unknown) => {
      s.end(err);
      throw err;
    },
  );
}

/** Run `fn` with `open`'s span active (an OpenSpan from `openSpan`); without one, just `fn()`. */
export function withSpan<T>(open: OpenSpan | undefined, fn: () => T): T {
  return open ? api!.context.with(open.context, fn) : fn();
}

/**
 * Run `fn` outside any trace: for background work (the outbox relay's rounds) that a request merely
 * kicked, so its timers and queries are not attributed to that request forever after.
 */
export function detached<T>(fn: () => T): T {
  return tracer ? api!.context.with(api!.ROOT_CONTEXT, fn) : fn();
}

/** The active span's W3C `traceparent`, to carry in a message header or store with an outbox row; null when off or outside a trace. */
export function currentTraceparent(): string | null {
  if (!tracer) return null;
  const carrier: Record<string, string> = {};
  api!.propagation.inject(api!.context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The active trace's id and span id (for log lines), or undefined. */
export function activeTraceIds(): { traceId: string; spanId: string } | undefined {
  if (!tracer) return undefined;
  const sc = api!.trace.getSpan(api!.context.active())?.spanContext();
  return sc && api!.trace.isSpanContextValid(sc) ? { traceId: sc.traceId, spanId: sc.spanId } : undefined;
}

/**
 * Wrap a Node HTTP request listener so each request (unless `skip` says otherwise) runs inside a
 * SERVER span that continues an incoming `traceparent` and ends when the response is done; the
 * listener runs inside the span's context. `nameRequestSpan` names the span once the request was routed.
 */
export function traceRequests<Req extends IncomingMessage, Res extends ServerResponse>(
  listener: (req: Req, res: Res) => void,
  opts: { skip?: (req: Req) => boolean } = {},
): (req: Req, res: Res) => void {
  if (!tracer) return listener;
  return (req, res) => {
    if (opts.skip?.(req)) return detached(() => listener(req, res));
    const header = req.headers.traceparent;
    // named by the method until routed (nameRequestSpan): a raw path would put ids into span names
    const s = openSpan(req.method ?? 'HTTP', 'server', { 'http.request.method': req.method ?? '', 'url.path': req.url?.split('?')[0] ?? '' }, { parent: typeof header === 'string' ? header : null })!;
    if (s.sampled) {
      incoming.set(req, s.span);
      res.once('close', () => {
        s.span.setAttribute('http.response.status_code', res.statusCode);
        s.end(res.statusCode >= 500 ? new Error(`HTTP ${res.statusCode}`) : undefined);
      });
    }
    // Nothing is bound to the request's emitters: Fastify runs its body parser in an AsyncResource
    // made in this context, so a body that arrives later (from the socket, outside it) still leads
    // to a handler inside it (tools/chaos/tracing.test.ts, "a body arriving after the headers"). The
    // context manager's bind would patch eight listener methods of both emitters, per request.
    api!.context.with(s.context, () => listener(req, res));
  };
}

const incoming = new WeakMap<IncomingMessage, Api.Span>();

/** Name a request's span after the route it matched (`POST /api/tasks/:id`): bounded names, never ids. */
export function nameRequestSpan(req: IncomingMessage, method: string, route: string): void {
  const span = incoming.get(req);
  if (!span) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
}

/**
 * Run `fn` in the trace a stored `traceparent` names (an outbox row's), or outside any trace when
 * there is none; spans `fn` opens become its children.
 */
export function continueTrace<T>(traceparent: string | null | undefined, fn: () => T): T {
  if (!tracer) return fn();
  return api!.context.with(traceparent ? api!.propagation.extract(api!.ROOT_CONTEXT, { traceparent }) : api!.ROOT_CONTEXT, fn);
}
