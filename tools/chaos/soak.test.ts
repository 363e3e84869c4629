import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem } from '../system.ts';
import { testSystemConfig } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';

/** Heap growth allowed over the held-load run, after a full GC on both ends. */
const HEAP_GROWTH_BOUND_MB = 40;
const RATE_PER_SECOND = 100;
const REQUESTS = 2_000;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function settledHeapMb(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

// A bounded run at a fixed request rate against the whole system in one process: memory after
// the run (after GC) may not exceed memory before it by more than the stated bound.
describe('load held', () => {
  let system: RunningSystem;
  let authorization: string;
  beforeAll(async () => {
    system = await startSystem(await testSystemConfig());
    authorization = (await createUserWithApiKey(system.pool)).authorization;
  });
  afterAll(async () => {
    await system.stop();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${system.url}${path}`, {
      method,
      headers: { authorization, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : null,
    });
    const json = (await res.json()) as Record<string, unknown>;
    return { status: res.status, json };
  };

  const mixedLoad = async (count: number) => {
    const statuses = new Map<number, number>();
    const ids: string[] = [];
    const interval = 1000 / RATE_PER_SECOND;
    const t0 = performance.now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const wait = t0 + i * interval - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const kind = i % 4;
      inflight.push(
        (async () => {
          const r =
            kind === 0 || ids.length === 0
              ? await call('POST', '/api/tasks', { title: `soak ${i}`, priority: 'NORMAL' })
              : kind === 1
                ? await call('GET', '/api/tasks?limit=20')
                : kind === 2
                  ? await call('POST', `/api/tasks/${ids[i % ids.length]}/complete`, {})
                  : await call('GET', `/api/tasks/${ids[i % ids.length]}`);
          if (r.status === 201) ids.push((r.json.task as { id: string }).id);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        })(),
      );
      if (inflight.length > 64) await inflight.shift();
    }
    await Promise.all(inflight);
    return { statuses, seconds: (performance.now() - t0) / 1000 };
  };

  it(`keeps heap growth under ${HEAP_GROWTH_BOUND_MB} MB over ${REQUESTS} requests at ${RATE_PER_SECOND}/s`, async () => {
    await mixedLoad(300); // warm-up: JIT, pools, caches reach their working size
    const before = settledHeapMb();
    const { statuses, seconds } = await mixedLoad(REQUESTS);
    const after = settledHeapMb();
    const rss = process.memoryUsage().rss / 1024 / 1024;
    console.log(
      `[load held] ${REQUESTS} mixed requests (create/list/complete/get) paced at ${RATE_PER_SECOND}/s in ${seconds.toFixed(1)} s; ` +
        `statuses ${JSON.stringify(Object.fromEntries(statuses))}; heap ${before.toFixed(1)} → ${after.toFixed(1)} MB (bound +${HEAP_GROWTH_BOUND_MB} MB); rss ${rss.toFixed(0)} MB`,
    );
    for (const status of statuses.keys()) expect(status, `unexpected status ${status}`).toBeLessThan(500);
    expect(after - before).toBeLessThan(HEAP_GROWTH_BOUND_MB);
  }, 300_000);
});
