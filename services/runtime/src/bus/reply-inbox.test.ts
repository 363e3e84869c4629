import { randomUUID } from 'node:crypto';
import { defineRpc } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { quietLogger, sharedNatsUrl } from '../../../../tools/testenv/index.ts';
import { createNatsBus } from './nats.ts';
import type { Bus } from './types.ts';

const log = quietLogger();
const makeRpc = () => defineRpc(`inbox${randomUUID().slice(0, 8)}.add`, z.object({ a: z.number(), b: z.number() }).strict(), z.object({ sum: z.number() }));

// Request/reply over the bus's own inbox (reply-inbox.ts): each reply reaches the request it answers.
describe('NATS requests over one reply inbox', () => {
  let server: Bus;
  let client: Bus;
  beforeAll(async () => {
    [server, client] = await Promise.all([createNatsBus({ servers: sharedNatsUrl(), name: 'inbox-server', log }), createNatsBus({ servers: sharedNatsUrl(), name: 'inbox-client', log })]);
  });
  afterAll(async () => {
    await Promise.all([server.close(), client.close()]);
  });

  it('hands each of many concurrent requests its own reply, whatever order the replies come in', async () => {
    const rpc = makeRpc();
    // later requests answered first: the replies arrive in the reverse order of the requests
    server.serve(rpc, async ({ a, b }) => {
      await new Promise((r) => setTimeout(r, 200 - a));
      return { sum: a + b };
    });
    await Promise.all([server.flush(), client.flush()]);
    const sums = await Promise.all(Array.from({ length: 200 }, (_, a) => client.request(rpc, { a, b: 1_000 })));
    expect(sums).toEqual(Array.from({ length: 200 }, (_, a) => ({ sum: a + 1_000 })));
  });

  it('ignores a reply that comes after its request timed out, while the next request waits for its own', async () => {
    const rpc = makeRpc();
    const gate = () => {
      let open!: () => void;
      const opened = new Promise<void>((r) => (open = r));
      return { open, opened };
    };
    const [lateGate, nextGate, nextTaken] = [gate(), gate(), gate()];
    let lateReplySent!: () => void;
    const lateSent = new Promise<void>((r) => (lateReplySent = r));
    server.serve(rpc, async ({ a, b }) => {
      if (a === 1) {
        await lateGate.opened;
        setImmediate(lateReplySent); // the reply is on its way once the handler has returned
      } else {
        nextTaken.open();
        await nextGate.opened;
      }
      return { sum: a + b };
    });
    await Promise.all([server.flush(), client.flush()]);
    await expect(client.request(rpc, { a: 1, b: 1 }, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'TIMEOUT' });
    const next = client.request(rpc, { a: 2, b: 40 });
    await nextTaken.opened;
    lateGate.open();
    await lateSent;
    await server.flush();
    await client.flush(); // the late reply ({ sum: 2 }) has reached the client while the next request waits
    nextGate.open();
    await expect(next).resolves.toEqual({ sum: 42 });
  });

  it('fails a request still waiting when the connection closes, at once rather than at its timeout, and any request after', async () => {
    const rpc = makeRpc();
    let started!: () => void;
    const handlerStarted = new Promise<void>((r) => (started = r));
    server.serve(rpc, async () => {
      started();
      return new Promise<never>(() => undefined); // never answers
    });
    const closing = await createNatsBus({ servers: sharedNatsUrl(), name: 'inbox-closing', log });
    await Promise.all([server.flush(), closing.flush()]);
    const waiting = closing.request(rpc, { a: 1, b: 2 }, { timeoutMs: 120_000 });
    await handlerStarted;
    await closing.close();
    await expect(waiting).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await expect(closing.request(rpc, { a: 1, b: 2 })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });
});
