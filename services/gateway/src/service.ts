import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { consumeUserDeletion, startMetricsListener, userDeletionDurable, type ServiceDefinition } from '@tasksvc/runtime';
import * as schema from './db/schema.ts';
import { serveAdmin } from './admin.ts';
import { buildGateway, DEFAULT_UI_DIR } from './app.ts';
import { startHttpFigures } from './http-metrics.ts';

/** Requests still running when the gateway stops get this long to finish before their sockets are cut. */
export const DRAIN_LIMIT_MS = 10_000;

/** After the delay, the gateway keeps listening until no new connection came for this long... */
export const QUIET_MS = 1_000;
/** ...but at most this much longer (the delay, this and DRAIN_LIMIT_MS stay inside the 20 s + delay that onShutdown allows). */
export const EXTRA_DELAY_MS = 8_000;

/**
 * The wait between SIGTERM and closing the listener: at least `delayMs`, then for as long as new
 * connections keep arriving (until none came for `quietMs`, at most `extraMs` more). Kubernetes
 * removes the pod's endpoint while it stops; on a loaded node kube-proxy can take longer than the
 * delay, and a listener closed before it is done refuses the connections it still sends here.
 * Each connection made during the wait is answered with `Connection: close` (the caller's hook).
 */
export async function waitForQuiet(server: Server, delayMs: number, quietMs = QUIET_MS, extraMs = EXTRA_DELAY_MS): Promise<void> {
  let last = Date.now();
  const seen = () => void (last = Date.now());
  server.on('connection', seen);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    await sleep(delayMs);
    const end = Date.now() + extraMs;
    for (let now = Date.now(); now - last < quietMs && now < end; now = Date.now()) await sleep(Math.min(quietMs - (now - last), end - now));
  } finally {
    server.off('connection', seen);
  }
}

/**
 * Graceful stop for an HTTP server: call at start-up, and the returned function wraps the server's own
 * close. New connections are refused, requests in flight finish (up to `limitMs`), and sockets that
 * never carried a request close at once: browsers open such spare sockets ahead of time, and Node
 * would otherwise keep them until its headers timeout, holding the stop for about a minute.
 */
export function gracefulClose(server: Server, limitMs = DRAIN_LIMIT_MS): (close: () => Promise<void>) => Promise<void> {
  const open = new Set<Socket>();
  const used = new WeakSet<Socket>();
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  });
  server.on('request', (req: { socket: Socket }) => used.add(req.socket));
  return async (close) => {
    const closing = close();
    for (const s of open) if (!used.has(s)) s.destroy();
    const cut = setTimeout(() => server.closeAllConnections(), limitMs);
    try {
      await closing;
    } finally {
      clearTimeout(cut);
    }
  };
}

/** The only public listener (port 3000): HTTP in, typed bus requests out. */
export const gatewayService: ServiceDefinition = {
  name: 'gateway',
  // its own schema: the shared per-user rate-limit counters (rate-limit.ts)
  migrations: { schema: 'gateway', dir: new URL('../migrations', import.meta.url).pathname },
  durables: [userDeletionDurable('gateway')],
  async start(deps) {
    // Stopping on Kubernetes: the endpoint removal reaches kube-proxy a moment after SIGTERM, so keep
    // answering for SHUTDOWN_DELAY_SECONDS (and while connections still come: waitForQuiet) and tell
    // each client to reconnect (to a pod that stays).
    let draining = false;
    const app = await buildGateway({ ...deps, uiDir: DEFAULT_UI_DIR, draining: () => draining });
    app.addHook('onSend', (_req, reply, payload, done) => {
      if (draining) reply.header('connection', 'close');
      done(null, payload);
    });
    const stopGracefully = gracefulClose(app.server);
    // Prometheus metrics on their own port, never on the public one (in the single-process mode: every service's).
    const metrics = deps.config.METRICS_PORT ? await startMetricsListener(deps.config.METRICS_PORT, deps.config.HOST) : undefined;
    try {
      await app.listen({ port: deps.config.PORT, host: deps.config.HOST });
    } catch (err) {
      await metrics?.close();
      throw err;
    }
    const http = startHttpFigures();
    const admin = serveAdmin(deps.bus, deps.log);
    // a deleted account's rate-limit counters go too (tables derived from db/schema.ts)
    const deletion = await consumeUserDeletion(deps, 'gateway', schema);
    return {
      figures: async () => ({ http: await http.figures() }),
      async stop() {
        http.stop();
        for (const s of admin) await s.stop();
        await deletion.stop();
        const delayMs = deps.config.SHUTDOWN_DELAY_SECONDS * 1000;
        if (delayMs > 0) {
          draining = true;
          deps.log.info({ delaySeconds: deps.config.SHUTDOWN_DELAY_SECONDS }, 'draining: still answering before the listener closes');
          await waitForQuiet(app.server, delayMs);
        }
        await stopGracefully(() => app.close());
        await metrics?.close();
      },
    };
  },
};
