/**
 * The webhook bench's receiver, in a process of its own as a real endpoint is (in the bench's process
 * it took a share of the one core the webhook service runs on): verifies every X-Service-Signature
 * in constant time and answers 204, or 401 on a bad one. Listens on WEBHOOK_RECEIVERS ports (default
 * 1) of 127.0.0.1, each a receiving host of its own to the sender (which bounds its requests per
 * host and port). Tells its parent over IPC the ports once listening, then, every 50 ms, the
 * deliveries that arrived since (`${taskId} ${path}` and the wall-clock arrival in ms,
 * performance.timeOrigin + now(), comparable across processes) and the count of bad signatures.
 * WEBHOOK_TARPITS more ports (default 0) take each request and never answer it (a receiver that
 * hangs), until the parent sends `{ recover: true }`: then they answer what they hold and what comes.
 *
 *   fork('tools/bench/lib/webhook-receiver.ts', { env: { WEBHOOK_SECRET, WEBHOOK_RECEIVERS, WEBHOOK_TARPITS } })
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '@tasksvc/runtime/crypto.ts';
import { startTarpits, withBody } from '../../testenv/tarpits.ts';

export interface ReceiverReport {
  ports?: number[];
  tarpits?: number[];
  arrived?: [key: string, at: number][];
  badSignatures?: number;
}

const SECRET = process.env.WEBHOOK_SECRET ?? '';
const send = (m: ReceiverReport) => process.send!(m);
let arrived: [string, number][] = [];
let badSignatures = 0;

/** A bad signature is answered 401 at once (true), by every port. */
const refused = (req: IncomingMessage, raw: Buffer, res: ServerResponse): boolean => {
  if (verifySignature(SECRET, raw, req.headers['x-service-signature'] as string | undefined)) return false;
  badSignatures++;
  res.writeHead(401).end();
  return true;
};
const answer = (req: IncomingMessage, raw: Buffer, res: ServerResponse) => {
  const taskId = (JSON.parse(raw.toString('utf8')) as { task: { id: string } }).task.id;
  arrived.push([`${taskId} ${req.url}`, performance.timeOrigin + performance.now()]);
  res.writeHead(204).end();
};

const ports = await Promise.all(
  Array.from({ length: Number(process.env.WEBHOOK_RECEIVERS ?? 1) }, () => {
    const server = createServer((req, res) => withBody(req, (raw) => refused(req, raw, res) || answer(req, raw, res)));
    return new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  }),
);
// the tarpits hold what they take (a held request its sender gave up on is never answered) until told to recover
const pits = await startTarpits(Number(process.env.WEBHOOK_TARPITS ?? 0), answer, refused);
process.on('message', (m: { recover?: boolean }) => {
  if (m.recover) pits.recover();
});
send({ ports, tarpits: pits.ports });
setInterval(() => {
  if (arrived.length === 0) return;
  send({ arrived, badSignatures });
  arrived = [];
}, 50);
process.on('disconnect', () => process.exit(0));
