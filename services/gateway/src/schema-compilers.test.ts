import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, createMemoryBus } from '@tasksvc/runtime';
import { describe, expect, it } from 'vitest';
import { testConfig } from '../../../tools/testenv/index.ts';
import { buildGateway } from './app.ts';

// The gateway validates with the routes' zod schemas (forward.ts); fastify's own compilers (Ajv,
// fast-json-stringify) would be loaded for nothing when the instance is made (app.ts NO_FASTIFY_SCHEMAS).
describe('fastify schema compilers', () => {
  it('the gateway loads no Ajv compiler, and a route with a fastify schema is refused when it starts', async () => {
    const log = createLogger('test', 'silent');
    const bus = createMemoryBus(log);
    const uiDir = mkdtempSync(join(tmpdir(), 'ui-'));
    writeFileSync(join(uiDir, 'index.html'), '<!doctype html><title>app</title>');
    const app = await buildGateway({ config: testConfig(), bus, pool: null as never, log, uiDir });
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    expect(loaded.some((k) => k.includes('fastify'))).toBe(true);
    expect(loaded.filter((k) => /[\\/](@fastify[\\/]ajv-compiler|ajv|ajv-formats)[\\/]/.test(k))).toEqual([]);
    await app.close();

    const withSchema = await buildGateway({ config: testConfig(), bus, pool: null as never, log, uiDir });
    withSchema.post('/api/with-schema', { schema: { body: { type: 'object' } } }, async () => 'never');
    await expect(withSchema.ready()).rejects.toThrow(/zod schemas/);
    await withSchema.close().catch(() => undefined);
    await bus.close();
  });
});
