/**
 * Bus benchmark: request/reply round trip over NATS (a private nats-server on loopback) vs the
 * in-process transport, same handler, same schemas, same run. Prints a table; run with
 * `node_modules/.bin/node tools/bench/bus.ts [--requests N] [--concurrency C]`.
 */
import { parseArgs } from 'node:util';
import { defineRpc } from '@tasksvc/proto';
import { createLogger, createMemoryBus, createNatsBus, type Bus } from '@tasksvc/runtime';
import { z } from 'zod';
import { startNats } from '../testenv/nats.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '5000' }, concurrency: { type: 'string', default: '16' } } });
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);

const rpc = defineRpc(
  'bench.echo',
  z.object({ id: z.string(), title: z.string(), n: z.number() }),
  z.object({ id: z.string(), title: z.string(), n: z.number() }),
);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function measure(bus: Bus, concurrency: number): Promise<{ rps: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const s = performance.now();
        await bus.request(rpc, { id: String(i), title: 'benchmark task title', n: i });
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return { rps: REQUESTS / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

const log = createLogger('bench', 'silent');
const nats = await startNats();
const server = await createNatsBus({ servers: nats.url, name: 'bench-server', log });
const client = await createNatsBus({ servers: nats.url, name: 'bench-client', log });
const memory = createMemoryBus(log);
for (const b of [server, memory]) b.serve(rpc, async (p) => p);
await server.flush();

const rows: { transport: string; concurrency: number; rps: number; p50: number; p99: number }[] = [];
for (const c of [1, CONCURRENCY]) {
  for (const [name, bus] of [['in-process', memory], ['NATS (loopback)', client]] as const) {
    await measure(bus, c); // warm-up
    rows.push({ transport: name, concurrency: c, ...(await measure(bus, c)) });
  }
}

console.log(`\nBus request/reply, ${REQUESTS} requests per row, JSON + zod validation on both ends, one Node process each side`);
console.log('| transport | concurrency | req/s | p50 ms | p99 ms | vs in-process (req/s) |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  const base = rows.find((x) => x.transport === 'in-process' && x.concurrency === r.concurrency)!;
  console.log(`| ${r.transport} | ${r.concurrency} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${(r.rps / base.rps).toFixed(2)}× |`);
}
await Promise.all([server.close(), client.close(), memory.close()]);
await nats.stop();
process.exit(0);
