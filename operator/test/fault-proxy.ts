/**
 * A plain-HTTP proxy on 127.0.0.1 in front of the test API server that answers chosen requests
 * with an error, or never, instead of forwarding them: the real server behind it, faults where a
 * test wants them.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { createServer, type IncomingMessage } from 'node:http';
import { request } from 'node:https';

export interface FaultProxy {
  /** a KubeConfig that talks to the API server through this proxy */
  kubeConfig(): KubeConfig;
  /** answer matching requests with `code` from now on (undefined: forward everything) */
  fail(match: ((req: IncomingMessage) => boolean) | undefined, code?: number): void;
  /** how many requests were answered with a fault */
  faults(): number;
  /** hold matching requests unanswered from now on, as a connection that died silently would (undefined: none) */
  hang(match: ((req: IncomingMessage) => boolean) | undefined): void;
  /** how many requests were held unanswered */
  held(): number;
  stop(): Promise<void>;
}

export async function startFaultProxy(upstream: KubeConfig): Promise<FaultProxy> {
  const target = new URL(upstream.getCurrentCluster()!.server);
  let match: ((req: IncomingMessage) => boolean) | undefined;
  let code = 503;
  let faults = 0;
  let hangMatch: ((req: IncomingMessage) => boolean) | undefined;
  let held = 0;
  const server = createServer((req, res) => {
    if (hangMatch?.(req)) {
      held++;
      return;
    }
    if (match?.(req)) {
      faults++;
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'injected fault', reason: 'ServiceUnavailable', code }));
      return;
    }
    const up = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, rejectUnauthorized: false },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        res.flushHeaders(); // a watch sends its headers long before any body: pass them on at once
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  const port = typeof a === 'object' && a ? a.port : 0;
  return {
    kubeConfig() {
      const kc = new KubeConfig();
      const user = upstream.getCurrentUser()!;
      kc.loadFromOptions({
        clusters: [{ name: 'proxy', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
        users: [user],
        contexts: [{ name: 'proxy', cluster: 'proxy', user: user.name }],
        currentContext: 'proxy',
      });
      return kc;
    },
    fail(m, c = 503) {
      match = m;
      code = c;
    },
    faults: () => faults,
    hang(m) {
      hangMatch = m;
    },
    held: () => held,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
