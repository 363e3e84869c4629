/**
 * A TCP forwarder a test can cut: `outage()` closes the listener and every connection through it (the
 * clients see refused and reset connections, as when a database goes away), `restore()` listens again
 * on the same port. Also how pods of the one-node cluster reach host listeners (tools/k8s/deploy.ts).
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  host: string;
  port: number;
  /** refuse new connections and reset the open ones */
  outage(): Promise<void>;
  /** accept again, on the same address */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Listens on `host:port` (0: any free port) and pipes every connection to `target`. */
export async function tcpProxy(host: string, target: { host: string; port: number }, port = 0): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const serve = (): Server =>
    createServer((client) => {
      const upstream = createConnection(target);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
  const listen = (server: Server, p: number) =>
    new Promise<number>((resolve, reject) => server.once('error', reject).listen(p, host, () => resolve((server.address() as { port: number }).port)));
  let server: Server | undefined = serve();
  const bound = await listen(server, port);
  const stop = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      if (!s) return resolve();
      s.close(() => resolve());
    });
  return {
    host,
    port: bound,
    outage: stop,
    async restore() {
      if (server) return;
      server = serve();
      await listen(server, bound);
    },
    close: stop,
  };
}
