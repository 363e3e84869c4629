import { describe, expect, it } from 'vitest';
import { createSendQueue } from './send-queue.ts';

describe('send queue', () => {
  it('runs the sends of one turn together after its I/O callbacks, in order', async () => {
    const q = createSendQueue();
    const ran: string[] = [];
    // three sends from three separate callbacks of one turn (as three HTTP requests would make them)
    const sent = await new Promise<Promise<void>[]>((resolve) => {
      const all: Promise<void>[] = [];
      let n = 0;
      for (const name of ['a', 'b', 'c']) {
        queueMicrotask(() => {
          all.push(q.send(() => ran.push(name)));
          expect(ran).toEqual([]); // nothing runs where it is asked for
          if (++n === 3) resolve(all);
        });
      }
    });
    await Promise.all(sent);
    expect(ran).toEqual(['a', 'b', 'c']);
  });

  it('rejects only the send that threw', async () => {
    const q = createSendQueue();
    const ran: string[] = [];
    const results = await Promise.allSettled([
      q.send(() => ran.push('first')),
      q.send(() => {
        throw new Error('connection closed');
      }),
      q.send(() => ran.push('third')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(ran).toEqual(['first', 'third']);
  });

  it('flush() runs what waits at once (before a connection drains), and later sends still go', async () => {
    const q = createSendQueue();
    const ran: string[] = [];
    const first = q.send(() => ran.push('before close'));
    q.flush();
    expect(ran).toEqual(['before close']);
    await first;
    await q.send(() => ran.push('after'));
    expect(ran).toEqual(['before close', 'after']);
  });
});
