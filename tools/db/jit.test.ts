import { createPool, freePort, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem } from '../system.ts';
import { fileSystemPostgres, quietLogger, testConfig, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';

/**
 * Every service on a PostgreSQL as distributions ship it (JIT on, jit_above_cost at its default):
 * no statement is JIT-compiled, idle or at work. A plan priced over the threshold is compiled at
 * every run (10-1,000 ms each): the webhook claim's planner override once made it so, four times a
 * second while idle (issue 61). The embedded PostgreSQL of the other tests has no JIT library.
 */
const server = fileSystemPostgres();
let sys: RunningSystem | undefined;
let stats: Pool;

beforeAll(async () => {
  if (!server.jit()) return;
  const DATABASE_URL = await server.database('system');
  sys = await startSystem(testConfig({ DATABASE_URL, PORT: String(await freePort()), HOST: '127.0.0.1', OUTBOUND_ALLOW_LIST: '127.0.0.1' }), { log: quietLogger('jit') });
  stats = createPool(DATABASE_URL, quietLogger('jit'), { max: 1 });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
  await stats?.end();
});

/** This database's statements that PostgreSQL JIT-compiled, and how many statements ran. */
async function jitFigures(): Promise<{ compiled: string[]; calls: number }> {
  const { rows } = await stats.query<{ query: string; calls: string; jit_functions: string }>(
    'SELECT query, calls, jit_functions FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())',
  );
  return {
    compiled: rows.filter((r) => Number(r.jit_functions) > 0).map((r) => `${r.jit_functions} functions: ${r.query.replace(/\s+/g, ' ').slice(0, 160)}`),
    calls: rows.reduce((n, r) => n + Number(r.calls), 0),
  };
}

describe('the whole system on a PostgreSQL with JIT on', () => {
  it('JIT-compiles no statement, idle and while tasks are written, listed, completed and delivered to a webhook', async (ctx) => {
    if (!server.jit()) return ctx.skip('the system PostgreSQL has no JIT (llvmjit) library: install the postgresql package that ships it (Debian: postgresql-15)');
    const { authorization } = await createUserWithApiKey(sys!.pool);
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sys!.url}${path}`, {
        method,
        headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json().catch(() => null)) as Record<string, unknown> | null };
    };
    // idle: every poll, relay round and timer of every service
    const idleFrom = (await jitFigures()).calls;
    await until(async () => (await jitFigures()).calls > idleFrom + 100, 'a hundred statements of the idle system', 60_000);
    expect((await jitFigures()).compiled).toEqual([]);

    // at work: an endpoint that refuses the connection, so deliveries fail and are retried too
    expect((await call('POST', '/api/settings/webhooks', { url: `http://127.0.0.1:${await freePort()}/hook` })).status).toBe(201);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const created = await call('POST', '/api/tasks', { title: `task ${i}` });
      expect(created.status).toBe(201);
      ids.push(String((created.json!.task as { id: string } | undefined)?.id ?? created.json!.id));
    }
    expect((await call('GET', '/api/tasks?limit=50')).status).toBe(200);
    for (const id of ids.slice(0, 5)) expect((await call('POST', `/api/tasks/${id}/complete`, {})).status).toBe(200);
    expect((await call('PATCH', '/api/tasks/bulk', { action: 'setPriority', taskIds: ids.slice(5), priority: 'HIGH' })).status).toBe(200);
    await until(async () => Number((await stats.query<{ n: string }>("SELECT count(*) AS n FROM webhook.deliveries WHERE attempts > 0")).rows[0]!.n) >= 40, 'the deliveries attempted', 60_000);
    expect((await jitFigures()).compiled).toEqual([]);
  });
});
