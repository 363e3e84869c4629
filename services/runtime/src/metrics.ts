import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { AppError, ERROR_STATUS, isErrorCode } from '@tasksvc/proto';
import client from 'prom-client';

/**
 * Prometheus metrics of this process (docs/observability.md). One registry per process: in the
 * single-process mode every service records into it and one listener serves all of it.
 *
 * Recording is cheap by design: counters and histograms are plain in-memory updates; everything that
 * needs a query (outbox backlog, pool usage) is collected when Prometheus scrapes, never per request.
 * Labels are small, bounded sets (route templates, subjects declared in code, outcomes), never raw
 * URLs, ids or error messages.
 */
export const registry = new client.Registry();

/** prom-client's default process and Node.js metrics (CPU, memory, GC, event-loop lag), once per process. */
let defaultsOn = false;
export function collectProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  // The event-loop delay histogram samples on a timer of this period: prom-client's 10 ms woke every
  // process 100 times a second, 100 ms still 10 times, the largest wake-up left in an idle service once
  // the polls were gone (tools/bench/idle.ts: about 0.1 % of a core per process, six in the distributed
  // mode against a 1 % budget for the whole system). Once a second a stalled loop still shows: a stall
  // over a second is always sampled, a shorter one in proportion; nodejs_eventloop_lag_seconds is
  // measured at each scrape, not by this timer.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1_000 });
}

type Labels<L extends string> = readonly L[];

/** A counter in the process registry (the same one again when a module is evaluated twice). */
export function counter<L extends string>(name: string, help: string, labelNames: Labels<L>): client.Counter<L> {
  return (registry.getSingleMetric(name) as client.Counter<L> | undefined) ?? new client.Counter({ name, help, labelNames, registers: [registry] });
}

/** Latency buckets in seconds: 5 ms to 30 s. */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function histogram<L extends string>(name: string, help: string, labelNames: Labels<L>, buckets = DURATION_BUCKETS): client.Histogram<L> {
  return (registry.getSingleMetric(name) as client.Histogram<L> | undefined) ?? new client.Histogram({ name, help, labelNames, buckets, registers: [registry] });
}

/** A gauge whose value is read when Prometheus scrapes (`collect` sets it). */
export function gauge<L extends string>(name: string, help: string, labelNames: Labels<L>, collect?: (g: client.Gauge<L>) => void | Promise<void>): client.Gauge<L> {
  const existing = registry.getSingleMetric(name) as client.Gauge<L> | undefined;
  if (existing) return existing;
  return new client.Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    ...(collect
      ? {
          collect(this: client.Gauge<L>) {
            return collect(this);
          },
        }
      : {}),
  });
}

/**
 * Keeps a label's values to a bounded set: the first `max` distinct values are used as they are,
 * any further value is counted as `other` (a guard against a peer inventing subjects).
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  private readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(value);
    return value;
  }
}

/**
 * The outcome of a bus request or a handled one, from its error: `ok`, `rejected` (the caller's
 * mistake, a 4xx code), `failed` (a 5xx code), `timeout` or `unavailable` (no service, no database).
 */
export type BusOutcome = 'ok' | 'rejected' | 'failed' | 'timeout' | 'unavailable';

export function outcomeOfCode(code: string | undefined): BusOutcome {
  if (code === undefined) return 'ok';
  if (code === 'TIMEOUT') return 'timeout';
  if (code === 'SERVICE_UNAVAILABLE' || code === 'DATABASE_UNAVAILABLE') return 'unavailable';
  return isErrorCode(code) && ERROR_STATUS[code] < 500 ? 'rejected' : 'failed';
}

export function outcomeOfError(err: unknown): BusOutcome {
  return err instanceof AppError ? outcomeOfCode(err.code) : 'failed';
}

// The bus layer (bus/instrument.ts) records these for both transports.
export const busMetrics = {
  requests: histogram('tasksvc_bus_request_duration_seconds', 'Bus requests sent, by subject and outcome (caller side, including the wait for a reply).', ['subject', 'outcome']),
  handled: histogram('tasksvc_bus_handler_duration_seconds', 'Bus requests answered by this process, by subject and outcome.', ['subject', 'outcome']),
  published: counter('tasksvc_bus_events_published_total', 'Durable events published (stored by JetStream, or handled in-process), by subject and outcome (ok, failed).', ['subject', 'outcome']),
  consumed: counter('tasksvc_bus_events_consumed_total', 'Durable events handled by a consumer of this process, by subject, durable and outcome (ok, failed: redelivered later).', ['subject', 'durable', 'outcome']),
};

/** Text exposition of the registry (`GET /metrics`), written to a Node response. */
export async function writeMetrics(res: ServerResponse): Promise<void> {
  try {
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(body);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics collection failed: ${(err as Error).message}\n`);
  }
}

/** Answer `GET /metrics` (true) or leave the request to the caller (false). */
export function handleMetricsRequest(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') return false;
  void writeMetrics(res);
  return true;
}

export interface MetricsListener {
  port(): number;
  close(): Promise<void>;
}

/** A small listener that serves only `GET /metrics` (the gateway's METRICS_PORT; its port 3000 never does). */
export async function startMetricsListener(port: number, host: string): Promise<MetricsListener> {
  collectProcessMetrics();
  const server = createServer((req, res) => {
    if (!handleMetricsRequest(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: () => {
      const a = server.address();
      return typeof a === 'object' && a ? a.port : port;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
