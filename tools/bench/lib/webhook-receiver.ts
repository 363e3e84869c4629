/**
 * The webhook bench's receiver, in a process of its own as a real endpoint is (in the bench's process
 * it took a share of the one core the webhook service runs on): verifies every X-Service-Signature
 * in constant time and answers 204, or 401 on a bad one. Listens on WEBHOOK_RECEIVERS ports (default
 * 1) of 127.0.0.1, each a receiving host of its own to the sender (which bounds its requests per
 * host and port). Tells its parent over IPC the ports once listening, then, every 50 ms, the
 * deliveries that arrived since (`${taskId} ${path}` and the wall-clock arrival in ms,
 * performance.timeOrigin + now(), comparable across processes) and the count of bad signatures.
 *
 *   fork('tools/bench/lib/webhook-receiver.ts', { env: { WEBHOOK_SECRET, WEBHOOK_RECEIVERS } })
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '@tasksvc/runtime/crypto.ts';

export interface ReceiverReport {
  ports?: number[];
  arrived?: [key: string, at: number][];
  badSignatures?: number;
}

const SECRET = process.env.WEBHOOK_SECRET ?? '';
const send = (m: ReceiverReport) => process.send!(m);
let arrived: [string, number][] = [];
let badSignatures = 0;

const receive: Parameters<typeof createServer>[1] = (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    if (!verifySignature(SECRET, raw, req.headers['x-service-signature'] as string | undefined)) {
      badSignatures++;
      res.writeHead(401).end();
      return;
    }
    const taskId = (JSON.parse(raw.toString('utf8')) as { task: { id: string } }).task.id;
    arrived.push([`${taskId} ${req.url}`, performance.timeOrigin + performance.now()]);
    res.writeHead(204).end();
  });
};
const ports = await Promise.all(
  Array.from({ length: Number(process.env.WEBHOOK_RECEIVERS ?? 1) }, () => {
    const server = createServer(receive);
    return new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  }),
);
send({ ports });
setInterval(() => {
  if (arrived.length === 0) return;
  send({ arrived, badSignatures });
  arrived = [];
}, 50);
process.on('disconnect', () => process.exit(0));
