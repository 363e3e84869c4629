import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedNatsUrl } from '../../../../tools/testenv/index.ts';
import { connectionOptions, PENDING_LIMIT } from './nats.ts';

/** A list-sized message (a page of 50 tasks is ~36 KB), over nats.js's default 32 KiB pendingLimit. */
const PAGE = new Uint8Array(40_000).fill(0x61);

// The send queue (send-queue.ts) makes the replies of one turn together so that they leave in one
// write; nats.js writes at once whenever more than its pendingLimit is buffered.
describe('NATS connection writes', () => {
  const open: NatsConnection[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((nc) => nc.close()));
  });

  /** The writes of a connection with these options for three list-sized messages and a flush, all of one turn. */
  async function writesOfOneTurn(options: ConnectionOptions): Promise<Uint8Array[]> {
    const nc = await connect(options);
    open.push(nc);
    await nc.flush();
    // nats.js hands each write to its transport's send (not a public API)
    const transport = (nc as unknown as { protocol: { transport: { send(frame: Uint8Array): void } } }).protocol.transport;
    const frames: Uint8Array[] = [];
    const send = transport.send.bind(transport);
    transport.send = (frame) => {
      frames.push(frame);
      send(frame);
    };
    for (let i = 0; i < 3; i++) nc.publish('pending-limit.page', PAGE);
    await nc.flush();
    return frames;
  }

  it('sends the list-sized messages of one turn in one write', async () => {
    const frames = await writesOfOneTurn(connectionOptions({ servers: sharedNatsUrl(), name: 'pending-limit' }));
    // the three messages and the flush's PING (with nats.js's default, a write every second message)
    expect(frames.length).toBe(1);
    expect(frames[0]!.length).toBeGreaterThan(3 * PAGE.length);
  });

  it('is what nats.js reads (its hidden option): without it the same turn takes more writes', async () => {
    const { pendingLimit, ...withoutIt } = connectionOptions({ servers: sharedNatsUrl(), name: 'pending-limit-default' }) as ConnectionOptions & { pendingLimit?: number };
    expect(pendingLimit).toBe(PENDING_LIMIT);
    expect((await writesOfOneTurn(withoutIt)).length).toBeGreaterThan(1);
  });
});
