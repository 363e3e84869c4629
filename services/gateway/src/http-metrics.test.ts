import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, createMemoryBus, registry } from '@tasksvc/runtime';
import { describe, expect, it } from 'vitest';
import { parseMetrics, value } from '../../../tools/testenv/metrics.ts';
import { testConfig } from '../../../tools/testenv/index.ts';
import { buildGateway } from './app.ts';

describe('HTTP metrics: bounded labels', () => {
  it('counts by route template; an unknown URL is counted as "unmatched", never as itself', async () => {
    const log = createLogger('test', 'silent');
    const bus = createMemoryBus(log);
    const uiDir = mkdtempSync(join(tmpdir(), 'ui-'));
    mkdirSync(join(uiDir, 'assets'));
    writeFileSync(join(uiDir, 'index.html'), '<!doctype html><title>app</title>');
    writeFileSync(join(uiDir, 'assets', 'app-0123abcd.js'), 'console.log(1)');
    const app = await buildGateway({ config: testConfig(), bus, pool: null as never, log, uiDir });
    const before = parseMetrics(await registry.metrics());
    const id = '3b241101-e2bb-4255-8caf-4136c566a962';
    expect((await app.inject({ method: 'GET', url: `/api/tasks/${id}?x=1` })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/api/no-such-thing/12345?user=someone' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: '/nowhere/at/all' })).statusCode).toBe(404);
    // every file of the built UI is a route of its own: all count as "static"; app pages fall back to the shell
    expect((await app.inject({ method: 'GET', url: '/assets/app-0123abcd.js' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/tasks/some-page' })).statusCode).toBe(200);
    await app.close();
    await bus.close();

    const text = await registry.metrics();
    const after = parseMetrics(text);
    const delta = (labels: Record<string, string>) => value(after, 'tasksvc_http_request_duration_seconds_count', labels) - value(before, 'tasksvc_http_request_duration_seconds_count', labels);
    expect(delta({ route: '/api/tasks/:id', method: 'GET', status: '401' })).toBe(1);
    expect(delta({ route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    expect(delta({ route: 'unmatched', method: 'DELETE', status: '404' })).toBe(1);
    expect(delta({ route: 'static', method: 'GET', status: '200' })).toBe(1);
    expect(delta({ route: 'unmatched', method: 'GET', status: '200' })).toBe(1);
    // no raw URL, id or query value ever becomes a label
    for (const raw of [id, 'no-such-thing', 'nowhere', 'someone', 'x=1', 'app-0123abcd', 'some-page']) expect(text).not.toContain(raw);
  });
});
