import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildGateway } from '@tasksvc/gateway';
import { webhookRoutes } from '@tasksvc/proto';
import { createMemoryBus, createNatsBus, createPool, startService, type Bus, type Config, type Pool, type RunningService } from '@tasksvc/runtime';
import { quietLogger, serveTestIdentities, testSystemConfig } from '../../../tools/testenv/index.ts';
import { webhookService } from '../src/service.ts';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

export interface Receiver {
  url: string;
  requests: Received[];
  /** decide the answer per request (default 200) */
  respond: (req: Received) => { status: number; headers?: Record<string, string> };
  close(): Promise<void>;
}

/** A real local HTTP receiver that keeps every request's raw body bytes. */
export async function startReceiver(port = 0): Promise<Receiver> {
  const r: Receiver = {
    url: '',
    requests: [],
    respond: () => ({ status: 200 }),
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: Received = { path: req.url ?? '/', headers: req.headers, raw: Buffer.concat(chunks) };
      r.requests.push(rec);
      const answer = r.respond(rec);
      res.writeHead(answer.status, answer.headers ?? {}).end('ok');
    });
  });
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', done));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  };
  return r;
}

export interface Harness {
  config: Config;
  bus: Bus;
  pool: Pool;
  app: Awaited<ReturnType<typeof buildGateway>>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test responses are inspected loosely
  call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, userId: string, body?: unknown): Promise<{ status: number; json: any }>;
  stop(): Promise<void>;
}

/** The webhook service and the real gateway (webhook routes only) on a fresh database. */
export async function startWebhookHarness(overrides: Record<string, string | undefined>, opts: { natsUrl?: string; service?: boolean } = {}): Promise<Harness> {
  const config = await testSystemConfig(overrides, { natsUrl: opts.natsUrl });
  const log = quietLogger('webhook-test');
  const pool = createPool(config.DATABASE_URL, log);
  const bus = config.NATS_URL ? await createNatsBus({ servers: config.NATS_URL, name: 'webhook-test', log }) : createMemoryBus(log);
  const identity = serveTestIdentities(bus);
  const svc: RunningService | null = opts.service === false ? null : await startService(webhookService, { config, bus, pool, log });
  const app = await buildGateway({ config, bus, pool, log, routes: webhookRoutes });
  return {
    config,
    bus,
    pool,
    app,
    async call(method, url, userId, body) {
      const res = await app.inject({ method, url, headers: { authorization: `Bearer test-${userId}` }, ...(body === undefined ? {} : { payload: body as object }) });
      return { status: res.statusCode, json: res.body ? res.json() : null };
    },
    async stop() {
      await app.close();
      await svc?.stop();
      await identity.stop();
      await bus.close();
      await pool.end();
    },
  };
}

/** A call to a running system's HTTP API as `user` (the test identities: `Bearer test-<id>`), its JSON answer parsed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test responses are inspected loosely
export async function callAs(baseUrl: string, user: string, method: string, url: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${baseUrl}${url}`, {
    method,
    headers: { authorization: `Bearer test-${user}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

/** Shared polling helper (tools/testenv/wait.ts), re-exported for this service's tests. */
export { until } from '../../../tools/testenv/index.ts';
