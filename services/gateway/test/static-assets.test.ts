import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { createMemoryBus, createPool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testConfig } from '../../../tools/testenv/index.ts';
import { buildGateway } from '../src/app.ts';

/** The built UI as the gateway serves it: precompressed copies as written by the UI build, long caching only for hashed files. */
describe('static UI assets', () => {
  const log = quietLogger();
  const uiDir = mkdtempSync(join(tmpdir(), 'ui-dist-'));
  const js = `console.log(${JSON.stringify('task service '.repeat(200))});`;
  let app: FastifyInstance;
  let pool: ReturnType<typeof createPool>;

  beforeAll(async () => {
    mkdirSync(join(uiDir, 'assets'));
    const write = (name: string, body: string, compressed = true) => {
      writeFileSync(join(uiDir, name), body);
      if (!compressed) return;
      writeFileSync(join(uiDir, `${name}.br`), brotliCompressSync(body));
      writeFileSync(join(uiDir, `${name}.gz`), gzipSync(body));
    };
    write('index.html', '<!doctype html><title>Task Service</title><div id="root"></div>');
    write('assets/index-DcPXExNt.js', js);
    write('sw.js', 'const PRECACHE = [];');
    write('icon-192.png', 'not really a png', false);
    pool = createPool('postgres://postgres@127.0.0.1:1/none', log);
    app = await buildGateway({ config: testConfig({ PUBLIC_APP_URL: 'http://localhost:3000' }), bus: createMemoryBus(log), pool, log, routes: [], uiDir });
  });
  afterAll(async () => {
    await app?.close();
    await pool?.end();
    rmSync(uiDir, { recursive: true, force: true });
  });

  const get = (url: string, encoding?: string) => app.inject({ method: 'GET', url, headers: { host: 'localhost:3000', ...(encoding ? { 'accept-encoding': encoding } : {}) } });

  it('sends the brotli copy to browsers that accept it, gzip to others, and the plain file otherwise', async () => {
    const br = await get('/assets/index-DcPXExNt.js', 'gzip, deflate, br');
    expect(br.statusCode).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers['content-type']).toMatch(/javascript/);
    expect(br.headers.vary).toMatch(/accept-encoding/i);
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(js);
    expect(br.rawPayload.length).toBeLessThan(js.length / 4);

    const gz = await get('/assets/index-DcPXExNt.js', 'gzip');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(js);

    const plain = await get('/assets/index-DcPXExNt.js');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.payload).toBe(js);
  });

  it('caches hashed files for a year as immutable; the shell, service worker and unhashed files revalidate', async () => {
    expect((await get('/assets/index-DcPXExNt.js', 'br')).headers['cache-control']).toBe('public, max-age=31536000, immutable');
    for (const url of ['/', '/index.html', '/sw.js', '/icon-192.png']) {
      const res = await get(url, 'br');
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['cache-control'], url).toBe('no-cache');
    }
    expect((await get('/index.html', 'br')).headers['content-encoding']).toBe('br');
  });
});
