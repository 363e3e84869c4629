import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Call `then` with a request's whole body once it has arrived. */
export function withBody(req: IncomingMessage, then: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => then(Buffer.concat(chunks)));
}

export type Respond = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

export interface Tarpits {
  /** one port of 127.0.0.1 each: a receiving host of its own to the webhook sender */
  ports: number[];
  /** requests held now, the most held at once, and those whose sender gave up waiting (closed) */
  state: { held: number; maxHeld: number; closedBySender: number; recovered: boolean };
  /** answer what they hold, and from now on answer at once */
  recover(): void;
  close(): Promise<void>;
}

/**
 * Receivers that hang (issue 56 #1's tarpits), for the webhook fairness test
 * (services/webhook/src/fairness.test.ts) and the bench's receiver (tools/bench/lib/webhook-receiver.ts
 * `fair`): `count` ports that read each request and hold it unanswered until `recover()`. A held
 * request its sender closes is dropped, never answered. `answer` writes the response; `screen`, when
 * given, may answer a request at once instead (e.g. a bad signature) and then returns true.
 */
export async function startTarpits(count: number, answer: Respond, screen?: (req: IncomingMessage, body: Buffer, res: ServerResponse) => boolean): Promise<Tarpits> {
  const state = { held: 0, maxHeld: 0, closedBySender: 0, recovered: false };
  const waiting: (() => void)[] = [];
  const servers: Server[] = [];
  const hold: Respond = (req, body, res) => {
    if (screen?.(req, body, res)) return;
    if (state.recovered) return answer(req, body, res);
    state.held++;
    state.maxHeld = Math.max(state.maxHeld, state.held);
    let open = true;
    res.on('close', () => {
      if (!open) return;
      open = false;
      state.held--;
      state.closedBySender++;
    });
    waiting.push(() => {
      if (!open) return;
      open = false;
      state.held--;
      answer(req, body, res);
    });
  };
  for (let i = 0; i < count; i++) {
    const server = createServer((req, res) => withBody(req, (body) => hold(req, body, res)));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    servers.push(server);
  }
  return {
    ports: servers.map((s) => (s.address() as AddressInfo).port),
    state,
    recover() {
      state.recovered = true;
      waiting.splice(0).forEach((a) => a());
    },
    async close() {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((done) => s.close(done));
      }
    },
  };
}
