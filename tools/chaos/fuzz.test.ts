import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem } from '../system.ts';
import { testSystemConfig } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { fuzzCases, operationsOf } from './fuzz.ts';

// Every operation of the OpenAPI document, hit with hostile input: no answer may be a 5xx (an impossible
// or absurd date must be a 400 naming the field), and the
// system must still be healthy afterwards. Runs against the whole real system (in-process bus).
describe('input fuzzing from /api/openapi.json', () => {
  let system: RunningSystem;
  let authorization: string;
  beforeAll(async () => {
    system = await startSystem(await testSystemConfig({ TOTP_ENCRYPTION_KEY: 'ab'.repeat(32) }));
    authorization = (await createUserWithApiKey(system.pool)).authorization;
  });
  afterAll(async () => {
    await system.stop();
  });

  it('answers every hostile request below 500 and stays healthy', async () => {
    const doc = (await (await fetch(`${system.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(20);
    const cases = fuzzCases(doc, { authorization });
    // the date cases reach the weekly review's ?date and every date field of a task body
    expect(cases.filter((c) => c.expect && c.path.startsWith('/api/review/weekly')).length).toBeGreaterThan(0);
    expect(cases.filter((c) => c.expect && c.label.startsWith('body.dueDate')).length).toBeGreaterThan(0);
    const failures: string[] = [];
    const byStatus = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < cases.length) {
          const c = cases[next++]!;
          let status: number;
          try {
            const res = await fetch(`${system.url}${c.path}`, { method: c.method, headers: c.headers, body: c.body ? new Uint8Array(c.body) : null, signal: AbortSignal.timeout(30_000) });
            status = res.status;
            const text = await res.text();
            if (c.expect) {
              const issues = (status === c.expect.status ? (JSON.parse(text) as { issues?: { path: string }[] }).issues : undefined) ?? [];
              if (!issues.some((i) => i.path === c.expect!.field)) failures.push(`${c.method} ${c.path.slice(0, 80)} [${c.label}] → ${status} ${text.slice(0, 200)}, expected ${c.expect.status} naming ${c.expect.field}`);
            }
          } catch (err) {
            failures.push(`${c.method} ${c.path.slice(0, 80)} [${c.label}]: transport error ${(err as Error).message}`);
            continue;
          }
          byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
          if (status >= 500) failures.push(`${c.method} ${c.path.slice(0, 80)} [${c.label}] → ${status}`);
        }
      }),
    );
    console.log(`[fuzz] ${cases.length} requests over ${operations.length} operations; statuses ${JSON.stringify(Object.fromEntries([...byStatus].sort()))}; ≥500: ${failures.length}`);
    expect(failures).toEqual([]);
    const health = await fetch(`${system.url}/api/health`);
    expect(health.status).toBe(200);
  }, 600_000);
});
