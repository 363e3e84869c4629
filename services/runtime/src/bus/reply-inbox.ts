import { createInbox, type MsgHdrs, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { AppError } from '@tasksvc/proto';
import type { SendQueue } from './send-queue.ts';

interface Waiter {
  subject: string;
  resolve(msg: Msg): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** Sends requests and hands each reply to its caller. */
export interface ReplyInbox {
  request(subject: string, data: Uint8Array, opts: { timeoutMs: number; headers: MsgHdrs }): Promise<Msg>;
}

/**
 * Core NATS request/reply over one inbox subscription of our own (`<inbox>.<n>`, one number per
 * request). nats.js's request() works the same way, but ends every answered request by cancelling
 * it, which builds a `RequestError` with its stack trace that nobody reads: ~6 % of the gateway's
 * CPU under load. Failures are AppErrors: no responders (nats-server's 503 status reply) is
 * SERVICE_UNAVAILABLE, no reply in time is TIMEOUT, a closed connection fails what is waiting at once.
 * Requests go out through `sends`, with the others of their turn of the event loop.
 */
export function createReplyInbox(nc: NatsConnection, sends: SendQueue, inboxPrefix?: string): ReplyInbox {
  const inbox = createInbox(inboxPrefix);
  const waiting = new Map<string, Waiter>();
  let next = 0;
  let sub: Subscription | undefined;

  const settle = (token: string): Waiter | undefined => {
    const w = waiting.get(token);
    if (!w) return undefined; // answered after its timeout (or twice): nobody waits for it any more
    waiting.delete(token);
    clearTimeout(w.timer);
    return w;
  };

  const listen = (): Subscription =>
    (sub ??= nc.subscribe(`${inbox}.*`, {
      callback: (err, msg) => {
        if (err) return; // the subscription ends with the connection: nc.closed() below fails the waiters
        const w = settle(msg.subject.slice(inbox.length + 1));
        if (!w) return;
        if (msg.data.length === 0 && msg.headers?.code === 503) w.reject(new AppError('SERVICE_UNAVAILABLE', `no service answers ${w.subject}`));
        else w.resolve(msg);
      },
    }));

  void nc.closed().then(() => {
    for (const token of [...waiting.keys()]) settle(token)?.reject(new AppError('SERVICE_UNAVAILABLE', 'message bus unavailable'));
  });

  return {
    request(subject, data, { timeoutMs, headers }) {
      return new Promise<Msg>((resolve, reject) => {
        const token = String(next++);
        const timer = setTimeout(() => settle(token)?.reject(new AppError('TIMEOUT', `no reply on ${subject} within ${timeoutMs} ms`)), timeoutMs);
        waiting.set(token, { subject, resolve, reject, timer });
        sends
          .send(() => {
            listen();
            nc.publish(subject, data, { reply: `${inbox}.${token}`, headers });
          })
          .catch((err: unknown) => {
            // a closed or draining connection refuses the subscription and the publish
            const closing = ['ClosedConnectionError', 'DrainingConnectionError'].includes((err as Error).name);
            settle(token)?.reject(closing ? new AppError('SERVICE_UNAVAILABLE', 'message bus unavailable') : (err as Error));
          });
      });
    },
  };
}
