import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPool, createLogger, verifySignature } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { CLUSTER_SERVICES, startCluster, type Cluster } from './cluster.ts';

const SECRET = 'chaos-webhook-secret';

/** A webhook receiver that verifies every signature and records which task ids it has seen. */
function startReceiver(): Promise<{ server: Server; url: string; created: Map<string, number>; badSignatures: number }> {
  const state = { created: new Map<string, number>(), badSignatures: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (!verifySignature(SECRET, raw, req.headers['x-service-signature'] as string | undefined)) {
        state.badSignatures++;
        res.writeHead(401).end();
        return;
      }
      const body = JSON.parse(raw.toString()) as { event: string; task: { id: string } };
      if (body.event === 'task.created') state.created.set(body.task.id, (state.created.get(body.task.id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, ...state, get badSignatures() { return state.badSignatures; } })),
  );
}


const summary: string[] = [];

// Six service processes, their own Postgres and nats-server; a steady load of task writes while
// faults are injected. Afterwards nothing acknowledged may be missing.
describe('reliability under faults', () => {
  let cluster: Cluster;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let authorization: string;

  beforeAll(async () => {
    receiver = await startReceiver();
    cluster = await startCluster({ OUTBOUND_ALLOW_LIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1,1,2,2,3', TOTP_ENCRYPTION_KEY: 'cd'.repeat(32), WEBHOOK_TIMEOUT_SECONDS: '3' });
    await cluster.ready(120_000);
    const pool = createPool(cluster.databaseUrl, createLogger('chaos', 'silent'));
    authorization = (await createUserWithApiKey(pool)).authorization;
    await pool.end();
    const hook = await fetch(`${cluster.url}/api/settings/webhooks`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, secret: SECRET, events: ['task.created'] }),
    });
    expect(hook.status, await hook.clone().text()).toBe(201);
  });
  afterAll(async () => {
    await cluster?.stop();
    receiver?.server.close();
    console.log(`\n[reliability summary]\n${summary.join('\n')}`);
  });

  it('keeps every acknowledged write and delivers each of its events while services are killed, NATS restarts and Postgres stops', async () => {
    const acknowledged: string[] = [];
    let attempts = 0;
    let running = true;
    const writer = async (w: number) => {
      let i = 0;
      while (running) {
        attempts++;
        try {
          const res = await fetch(`${cluster.url}/api/tasks`, {
            method: 'POST',
            headers: { authorization, 'content-type': 'application/json' },
            body: JSON.stringify({ title: `chaos ${w}-${i++}` }),
            signal: AbortSignal.timeout(10_000),
          });
          if (res.status === 201) acknowledged.push(((await res.json()) as { task: { id: string } }).task.id);
          else await res.arrayBuffer();
        } catch {
          // refused or cut off while a process is down: not acknowledged, so nothing is owed
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const writers = Array.from({ length: 3 }, (_, w) => writer(w));

    const scenario = async (name: string, inject: () => Promise<void>) => {
      const before = acknowledged.length;
      await inject();
      await cluster.ready(120_000);
      await until(() => acknowledged.length > before + 5, `writes after ${name}`, 60_000);
      summary.push(`scenario ${name}: acknowledged writes so far ${acknowledged.length}`);
    };

    await until(() => acknowledged.length > 10, 'first writes', 60_000);
    for (const name of CLUSTER_SERVICES) {
      await scenario(`kill -9 ${name}`, async () => {
        await cluster.kill(name);
        await new Promise((r) => setTimeout(r, 500));
        await cluster.start(name);
      });
    }
    await scenario('restart nats-server', () => cluster.restartNats());
    await scenario('stop and start PostgreSQL', async () => {
      await cluster.stopPostgres();
      await new Promise((r) => setTimeout(r, 1_500));
      await cluster.startPostgres();
    });
    running = false;
    await Promise.all(writers);

    // Every acknowledged write exists…
    const missing: string[] = [];
    for (const id of acknowledged) {
      const res = await fetch(`${cluster.url}/api/tasks/${id}`, { headers: { authorization } });
      if (res.status !== 200) missing.push(`${id} → ${res.status}`);
      await res.arrayBuffer();
    }
    // …and every one of its events reached the receiver at least once.
    await until(() => acknowledged.every((id) => receiver.created.has(id)), 'every task.created delivered', 180_000).catch(() => undefined);
    const undelivered = acknowledged.filter((id) => !receiver.created.has(id));
    const duplicates = [...receiver.created.values()].filter((n) => n > 1).length;
    summary.push(
      `injected: SIGKILL of each of ${CLUSTER_SERVICES.length} services, a nats-server restart, a PostgreSQL stop/start; ` +
        `checked: ${acknowledged.length} acknowledged of ${attempts} attempted writes, their task.created webhooks (signature verified); ` +
        `lost writes: ${missing.length}, undelivered events: ${undelivered.length}, redelivered (at-least-once): ${duplicates}, bad signatures: ${receiver.badSignatures}`,
    );
    expect(missing).toEqual([]);
    expect(undelivered).toEqual([]);
    expect(receiver.badSignatures).toBe(0);
  }, 600_000);
});
