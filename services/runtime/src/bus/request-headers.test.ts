import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { REQUEST_ID_HEADER } from '@tasksvc/proto';
import { describe, expect, it } from 'vitest';
import { requestHeaders, TRACEPARENT } from './request-headers.ts';

/** nats.js's publish writes what this returns (MsgHdrsImpl; the interface leaves it out). */
const wire = (h: MsgHdrs): Uint8Array => (h as unknown as { encode(): Uint8Array }).encode();

/** What nats.js's own headers() with the same sets puts on the wire. */
function reference(requestId: string, traceparent?: string): Uint8Array {
  const h = natsHeaders();
  h.set(REQUEST_ID_HEADER, requestId);
  if (traceparent) h.set(TRACEPARENT, traceparent);
  return wire(h);
}

describe('requestHeaders', () => {
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  it.each([
    ['a uuid', '0b4c3f5e-7a52-4c0e-9b1a-2f1d3c4e5a6b', undefined],
    ['a fastify id', 'req-1a', undefined],
    ['with a traceparent', '4bf92f3577b34da6a3ce929d0e0e4736', traceparent],
    ['a space inside, non-ASCII', 'a b ü', traceparent],
    ['leading and trailing spaces (nats.js trims them)', '  padded  ', undefined],
  ])('writes the bytes nats.js writes: %s', (_what, requestId, tp) => {
    expect(Buffer.from(wire(requestHeaders(requestId, tp))).toString('utf8')).toBe(Buffer.from(reference(requestId, tp)).toString('utf8'));
  });

  it('refuses a value with CR or LF as nats.js does', () => {
    expect(() => requestHeaders('a\r\nx-evil: 1', null)).toThrow(/\\r or \\n/);
  });
});
