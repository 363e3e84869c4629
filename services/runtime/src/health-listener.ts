import { createServer } from 'node:http';
import type { Bus } from './bus/types.ts';
import { collectProcessMetrics, handleMetricsRequest } from './metrics.ts';

/** How long the bus may take to answer a round trip before the service counts as not ready. */
const BUS_CHECK_MS = 2_000;

export interface HealthListener {
  /** Still starting, and why (e.g. waiting for the database): /health says so with its 503. */
  starting(reason: string): void;
  /** The bus is connected: /health checks a round trip on it from now on. */
  attachBus(bus: Bus): void;
  /** The service has subscribed: answer 200 from now on (while the bus answers). */
  ready(): void;
  /** Shutting down: answer 503 so no new work is routed here. */
  stopping(): void;
  close(): Promise<void>;
}

/**
 * Probe endpoints for a service that has no HTTP port of its own (everything but the gateway):
 * `GET /health` (readiness) answers 200 `{"status":"ok"}` once started and while a round trip to the
 * bus succeeds, else 503 with the reason; `GET /livez` (liveness) answers 200 while the process runs,
 * so an outage of NATS makes pods unready but does not restart them all; `GET /metrics` is this
 * process's Prometheus metrics (metrics.ts). No other route. It listens from the first moment of the
 * process (before the database and the bus are reached), so a pod waiting for a dependency is alive
 * and says what it waits for, instead of failing its liveness probe.
 */
export async function startHealthListener(port: number, service: string): Promise<HealthListener> {
  let state: 'starting' | 'ready' | 'stopping' = 'starting';
  let startingReason = 'starting';
  let bus: Bus | undefined;
  collectProcessMetrics();
  const server = createServer((req, res) => {
    if (handleMetricsRequest(req, res)) return;
    void (async () => {
      const path = req.url?.split('?')[0];
      if (req.method === 'GET' && path === '/livez') {
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify({ status: 'ok', service }));
        return;
      }
      if (req.method !== 'GET' || path !== '/health') {
        res.writeHead(404).end();
        return;
      }
      let problem = state === 'ready' ? '' : state === 'starting' ? startingReason : state;
      if (!problem && bus) {
        const b = bus;
        const timeout = new Promise<string>((r) => setTimeout(() => r('bus unreachable'), BUS_CHECK_MS).unref());
        problem = await Promise.race([b.flush().then(() => '', () => 'bus unreachable'), timeout]);
      }
      res.writeHead(problem ? 503 : 200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(problem ? { status: 'unavailable', service, reason: problem } : { status: 'ok', service }));
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, resolve);
  });
  return {
    starting: (reason) => void (startingReason = reason),
    attachBus: (b) => void (bus = b),
    ready: () => void (state = 'ready'),
    stopping: () => void (state = 'stopping'),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
