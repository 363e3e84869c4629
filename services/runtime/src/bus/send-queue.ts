/** Sends on one NATS connection that leave together (see createSendQueue). */
export interface SendQueue {
  /** Runs `send` with the others of this turn of the event loop; resolves once it ran, rejects with what it threw. */
  send(send: () => void): Promise<void>;
  /** Runs what waits now (before the connection drains). */
  flush(): void;
}

/**
 * Core NATS sends made in one turn of the event loop, made together after its I/O callbacks
 * (setImmediate), so that they leave in one socket write. nats.js writes its buffer in a microtask
 * after the first send, and the microtasks run after every I/O callback: requests from separate HTTP
 * requests, or the replies to the creates one batch answers, went out one write each, and each write
 * on loopback wakes nats-server (and the write costs the sender a system call) for one message.
 */
export function createSendQueue(): SendQueue {
  let waiting: { send: () => void; resolve(): void; reject(err: unknown): void }[] = [];
  const flush = () => {
    const now = waiting;
    waiting = [];
    for (const w of now) {
      try {
        w.send();
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    }
  };
  return {
    send(send) {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ send, resolve, reject });
        if (waiting.length === 1) setImmediate(flush);
      });
    },
    flush,
  };
}
