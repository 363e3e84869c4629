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
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '@tasksvc/runtime/crypto.ts';

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

/** the tarpits' answers not given yet (null once they recovered) */
let held: (() => void)[] | null = [];

const receiver =
  (tarpit: boolean): Parameters<typeof createServer>[1] =>
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (!verifySignature(SECRET, raw, req.headers['x-service-signature'] as string | undefined)) {
        badSignatures++;
        res.writeHead(401).end();
        return;
      }
      const answer = () => {
        if (res.destroyed) return; // the sender gave up waiting
        const taskId = (JSON.parse(raw.toString('utf8')) as { task: { id: string } }).task.id;
        arrived.push([`${taskId} ${req.url}`, performance.timeOrigin + performance.now()]);
        res.writeHead(204).end();
      };
      if (tarpit && held) held.push(answer);
      else answer();
    });
  };
const listen = (count: number, tarpit: boolean) =>
  Promise.all(
    Array.from({ length: count }, () => {
      const server = createServer(receiver(tarpit));
      return new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
    }),
  );
const ports = await listen(Number(process.env.WEBHOOK_RECEIVERS ?? 1), false);
const tarpits = await listen(Number(process.env.WEBHOOK_TARPITS ?? 0), true);
process.on('message', (m: { recover?: boolean }) => {
  if (!m.recover || !held) return;
  const answers = held;
  held = null;
  answers.forEach((a) => a());
});
send({ ports, tarpits });
setInterval(() => {
  if (arrived.length === 0) return;
  send({ arrived, badSignatures });
  arrived = [];
}, 50);
process.on('disconnect', () => process.exit(0));
