import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { spanName } from './db/pool.ts';

const node = new URL('../../../node_modules/.bin/node', import.meta.url).pathname;
const runtime = new URL('./index.ts', import.meta.url).pathname;

describe('tracing', () => {
  it('off (no OTEL_EXPORTER_OTLP_ENDPOINT): no OpenTelemetry SDK is loaded, our code loads not even the API, and a request and a publish run untraced', () => {
    // a fresh process that records every module it resolves while the runtime works without an endpoint
    const script = `
      const { registerHooks } = await import('node:module');
      const seen = [];
      registerHooks({ resolve(specifier, context, next) { if (specifier.includes('@opentelemetry')) seen.push(specifier + ' from ' + (context.parentURL ?? '').split('node_modules/').pop()); return next(specifier, context); } });
      const { z } = await import('zod');
      const rt = await import(${JSON.stringify(runtime)});
      const tracing = await rt.startTracing(rt.loadConfig({ DATABASE_URL: 'postgres://x@127.0.0.1:1/x', AUTH_SECRET: 'x'.repeat(32), AUTH_TRUST_HOST: 'true' }), 'tasks');
      const log = rt.createLogger('tasks', 'silent');
      const bus = rt.createMemoryBus(log, { durables: [{ durable: 'd', filter: 'events.t' }] });
      const rpc = { subject: 'svc.t', request: z.object({ n: z.number() }), reply: z.object({ n: z.number() }) };
      bus.serve(rpc, async (p) => ({ n: p.n + 1 }));
      const event = { subject: 'events.t', schema: z.object({ n: z.number() }) };
      let consumed;
      await bus.consume(event, async (p, meta) => { consumed = meta; }, { durable: 'd' });
      const reply = await bus.request(rpc, { n: 1 });
      await bus.publish(event, { n: 2 }, 'm1');
      console.log(JSON.stringify({ tracing: tracing ?? null, on: rt.tracingOn(), reply, traceparent: rt.currentTraceparent(), meta: consumed, row: rt.outboxRow(event, { n: 3 }).traceparent, seen }));`;
    const r = spawnSync(node, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: new URL('..', import.meta.url).pathname });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { seen: string[] };
    // prom-client (metrics.ts) looks for the API itself, for exemplars; with no provider registered it is a no-op
    expect(out.seen.filter((s) => !s.startsWith('@opentelemetry/api from prom-client/'))).toEqual([]);
    expect({ ...out, seen: undefined }).toEqual({ tracing: null, on: false, reply: { n: 2 }, traceparent: null, meta: { msgId: 'm1', subject: 'events.t', deliveryCount: 1 }, row: null, seen: undefined });
  });

  it('names SQL spans by verb, and by table for simple writes (bounded names, never values)', () => {
    expect(spanName('SELECT id FROM tasks.tasks WHERE id = $1')).toBe('SELECT');
    expect(spanName('insert into "tasks".outbox (id) values ($1)')).toBe('INSERT tasks.outbox');
    expect(spanName('UPDATE webhook.deliveries SET x = 1')).toBe('UPDATE webhook.deliveries');
    expect(spanName('DELETE FROM box.outbox WHERE id = $1')).toBe('DELETE box.outbox');
    expect(spanName('WITH p AS (UPDATE tasks.profiles SET n = n + 1) SELECT 1')).toBe('WITH');
    expect(spanName('  BEGIN')).toBe('BEGIN');
  });
});
