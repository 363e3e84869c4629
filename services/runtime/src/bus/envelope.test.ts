import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { freePort } from '../ports.ts';
import { createLogger } from '../logger.ts';
import { defineRpc } from '@tasksvc/proto';
import { z } from 'zod';
import { envelopeJson, replyDataJson, toErrorBody } from './envelope.ts';

const log = createLogger('test', 'silent');

describe('error bodies', () => {
  it('a database out of reach is 503 DATABASE_UNAVAILABLE, not an internal error', async () => {
    // A real refused connection: nothing listens on a fresh port.
    const client = new pg.Client({ host: '127.0.0.1', port: await freePort(), user: 'nobody', connectionTimeoutMillis: 2_000 });
    const err = await client.connect().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).not.toBeNull();
    expect(toErrorBody(err, log, 'tasks.http.list')).toMatchObject({ code: 'DATABASE_UNAVAILABLE' });
    // a server shutting down (57P01) and a dropped connection likewise
    expect(toErrorBody(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), log, 's').code).toBe('DATABASE_UNAVAILABLE');
    expect(toErrorBody(new Error('Connection terminated unexpectedly'), log, 's').code).toBe('DATABASE_UNAVAILABLE');
  });

  it('keeps the caller’s own mistakes 4xx and anything else internal', () => {
    expect(toErrorBody(Object.assign(new Error('invalid input syntax'), { code: '22P02' }), log, 's').code).toBe('VALIDATION_FAILED');
    expect(toErrorBody(Object.assign(new Error('duplicate'), { code: '23505' }), log, 's').code).toBe('CONFLICT');
    expect(toErrorBody(new Error('boom'), log, 's').code).toBe('INTERNAL');
  });
});

describe('reply envelopes as JSON bytes', () => {
  const rpc = defineRpc('test.envelope', z.object({}), z.object({ n: z.number() }));
  const bytes = (text: string) => Buffer.from(text);
  const data = (text: string) => Buffer.from(replyDataJson(rpc, bytes(text))).toString();

  it('takes an ok reply’s data as written, whatever it holds, without copying it', () => {
    for (const value of [{ n: 1 }, { n: 2, s: '}{"ok":true,"data":' }, { n: 3, s: 'zoë ✓ 🎉' }, [], null, 'text', 0]) {
      const text = envelopeJson({ ok: true, data: value });
      expect(JSON.parse(text)).toEqual({ ok: true, data: value });
      expect(data(text)).toBe(JSON.stringify(value));
    }
    const wire = bytes(envelopeJson({ ok: true, data: { n: 1 } }));
    expect(replyDataJson(rpc, wire).buffer).toBe(wire.buffer);
  });

  it('throws an error reply’s AppError, and refuses what is no envelope', () => {
    expect(() => data(envelopeJson({ ok: false, error: { code: 'NOT_FOUND', message: 'gone' } }))).toThrow(expect.objectContaining({ code: 'NOT_FOUND', message: 'gone' }));
    expect(() => data('not json')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    expect(() => data('')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    expect(() => data('{"ok":true,"data":')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    // an envelope written otherwise (another writer) is parsed and checked against the schema
    expect(data('{"data":{"n":3,"x":1},"ok":true}')).toBe('{"n":3}');
    expect(() => data('{"data":{"n":"3"},"ok":true}')).toThrow(/reply of test\.envelope/);
  });
});
