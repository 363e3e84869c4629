import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@tasksvc/runtime';
import { RequestLogController } from './request-log.ts';

describe('request log', () => {
  it('writes one line per request; health probes and UI files only at debug', async () => {
    const lines: { level: number; msg: string; req?: { method: string; url: string }; res?: { statusCode: number }; responseTime?: number }[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(...chunk.toString().trim().split('\n').map((l) => JSON.parse(l) as (typeof lines)[number])), done()) });
    const app = Fastify({ loggerInstance: createLogger('gateway', 'debug', { destination: sink }), logController: new RequestLogController() });
    app.get('/api/health', async () => ({ status: 'ok' }));
    app.get('/api/tasks', async () => ({ tasks: [] }));
    app.get('/assets/app.js', async () => 'js');
    for (const url of ['/api/health', '/api/tasks', '/assets/app.js']) expect((await app.inject({ method: 'GET', url })).statusCode).toBe(200);
    await app.close();

    const requestLines = lines.filter((l) => l.req);
    expect(requestLines.map((l) => [l.req!.url, l.level, l.res!.statusCode])).toEqual([
      ['/api/health', 20, 200],
      ['/api/tasks', 30, 200],
      ['/assets/app.js', 20, 200],
    ]);
    for (const l of requestLines) expect(typeof l.responseTime).toBe('number');
    expect(lines.some((l) => l.msg === 'incoming request')).toBe(false);
  });
});
