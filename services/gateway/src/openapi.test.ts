import { Ajv2020 } from 'ajv/dist/2020.js';
import { routes } from '@tasksvc/proto';
import { createMemoryBus, createPool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testConfig } from '../../../tools/testenv/index.ts';
import { buildGateway } from './app.ts';

let app: FastifyInstance;
const pool = createPool('postgres://postgres@127.0.0.1:1/none', quietLogger());

beforeAll(async () => {
  const log = quietLogger();
  app = await buildGateway({ config: testConfig({ PUBLIC_APP_URL: 'https://tasks.example.test' }), bus: createMemoryBus(log), pool, log });
});
afterAll(async () => {
  await app?.close();
  await pool.end();
});

type Doc = { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object }> }; parameters?: { name: string; in: string }[]; responses: Record<string, unknown> }>> };

describe('OpenAPI document (generated from the proto zod schemas)', () => {
  it('is OpenAPI 3.1 and covers every declared route of every domain, plus health', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<Doc>();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0]!.url).toBe('https://tasks.example.test');
    expect(doc.paths['/api/health']!.get).toBeDefined();
    expect(routes.length).toBeGreaterThan(20);
    for (const r of routes) {
      const op = doc.paths[r.path.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(Object.keys(op!.responses)).toContain(String(r.status));
      for (const name of r.path.match(/:(\w+)/g) ?? []) expect(op!.parameters?.some((p) => p.in === 'path' && p.name === name.slice(1)), `${r.path} ${name}`).toBe(true);
    }
  });

  it('request schemas behave like the gateway validation (checked with Ajv on JSON Schema 2020-12)', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json<Doc>();
    const ajv = new Ajv2020({ strict: false, logger: false });
    const create = ajv.compile(doc.paths['/api/tasks']!.post!.requestBody!.content['application/json']!.schema);
    expect(create({ title: 'Buy milk', dueDate: '2026-12-01', type: 'RECURRING', recurrenceType: 'NTH_WEEKDAY', recurrenceWeekdays: [4], recurrenceWeekOfMonth: -1 })).toBe(true);
    expect(create({})).toBe(false); // title is required
    expect(create({ title: 'x', unknown: 1 })).toBe(false); // bodies are strict
    expect(create({ title: 'x', priority: 'URGENT' })).toBe(false);
    const list = doc.paths['/api/tasks']!.get!.parameters!.map((p) => `${p.in}:${p.name}`);
    expect(list).toEqual(expect.arrayContaining(['query:limit', 'query:offset', 'query:topicId', 'query:completed']));
  });

  it('publishes the export format as components.schemas.UserExport, referenced by GET /api/user/export', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json<Doc & { components: { schemas: Record<string, { properties: Record<string, unknown> }> } }>();
    const ok = doc.paths['/api/user/export']!.get!.responses['200'] as { content: Record<string, { schema: { $ref: string } }> };
    expect(ok.content['application/json']!.schema.$ref).toBe('#/components/schemas/UserExport');
    expect(Object.keys(doc.components.schemas.UserExport!.properties)).toEqual(expect.arrayContaining(['format', 'version', 'exportedAt', 'account', 'tasks', 'completions']));
    expect(doc.paths['/api/user/export.ics']!.get).toBeDefined();
  });

  it('serves a human docs page at /api-docs listing the operations', async () => {
    const res = await app.inject({ method: 'GET', url: '/api-docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('/api/tasks/{id}/complete');
    expect(res.body).toContain('/api/openapi.json');
  });
});
