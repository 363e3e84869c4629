import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { buildGateway } from '@tasksvc/gateway';
import { pingRpc, taskEvent, taskEvents, webhookRoutes, type TaskEventName, type TaskEventPayload } from '@tasksvc/proto';
import { createNatsBus, createPool, freePort, type Bus, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, serveTestIdentities, startNats, testDatabase, testConfig, type LocalNats } from '../../../tools/testenv/index.ts';
import { until } from '../test/support.ts';

/**
 * Soak: 1,000 task events to 5 endpoints of the webhook service running as its own process. One
 * endpoint fails 30% of requests at random, one is down for a while; the process is SIGKILLed twice
 * and nats-server restarted once. Every (event, endpoint) pair must arrive, and the log must agree.
 */

const ROOT = new URL('../../../', import.meta.url).pathname;
const EVENTS = 1_000;
const SECRET = 'soak-secret-0123456789';
const KEY = randomBytes(32).toString('hex');

interface Endpoint {
  name: string;
  port: number;
  server: Server | null;
  /** `${taskId}` → delivery ids answered 2xx */
  ok: Map<string, Set<string>>;
  requests: number;
  badSignatures: number;
  failRate: number;
  signed: boolean;
  id?: string;
}

function listen(ep: Endpoint): Promise<void> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      ep.requests++;
      const raw = Buffer.concat(chunks);
      if (ep.signed) {
        const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`);
        const given = Buffer.from(String(req.headers['x-service-signature'] ?? ''));
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          ep.badSignatures++;
          res.writeHead(401).end();
          return;
        }
      }
      if (Math.random() < ep.failRate) {
        res.writeHead(500).end();
        return;
      }
      const taskId = (JSON.parse(raw.toString('utf8')) as TaskEventPayload).task.id;
      const set = ep.ok.get(taskId) ?? new Set<string>();
      set.add(String(req.headers['x-service-delivery']));
      ep.ok.set(taskId, set);
      res.writeHead(200).end();
    });
  });
  ep.server = server;
  return new Promise((r) => server.listen(ep.port, '127.0.0.1', () => r()));
}

async function close(ep: Endpoint): Promise<void> {
  const s = ep.server;
  ep.server = null;
  if (!s) return;
  s.closeAllConnections();
  await new Promise((r) => s.close(r));
}

let nats: LocalNats;
let bus: Bus;
let pool: Pool;
let env: Record<string, string>;
let child: ChildProcess | null = null;
let childLog = '';
const endpoints: Endpoint[] = [];

function spawnWebhook(): ChildProcess {
  const c = spawn(`${ROOT}node_modules/.bin/node`, [`${ROOT}services/webhook/src/main.ts`], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  c.stderr.on('data', (d: Buffer) => {
    childLog = (childLog + d.toString()).slice(-4000);
  });
  return c;
}

async function kill(c: ChildProcess | null): Promise<void> {
  if (!c || c.exitCode !== null || c.signalCode) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill('SIGKILL');
  await exited;
}

async function waitReady(): Promise<void> {
  await until(async () => bus.request(pingRpc('webhook'), {}, { timeoutMs: 1_000 }).catch(() => null), 'webhook process answering ping', 60_000);
}

beforeAll(async () => {
  nats = await startNats();
  const DATABASE_URL = await testDatabase('soak');
  env = {
    DATABASE_URL,
    NATS_URL: nats.url,
    AUTH_SECRET: 'soak-secret-soak-secret-soak-secret-0123',
    AUTH_TRUST_HOST: 'true',
    OUTBOUND_ALLOW_LIST: '127.0.0.1',
    SECRETS_KEYRING: `soak:${KEY}`,
    // fast, test-friendly schedule: 60 retries 0.2–1 s apart (production default: docs/webhooks.md)
    WEBHOOK_RETRY_SCHEDULE: [0.2, 0.4, 0.8, ...Array<number>(57).fill(1)].join(','),
    WEBHOOK_TIMEOUT_SECONDS: '2',
    LOG_LEVEL: 'warn',
    RUNTIME_ENV: 'test',
  };
  const log = quietLogger('soak');
  pool = createPool(DATABASE_URL, log);
  bus = await createNatsBus({ servers: nats.url, name: 'soak-test', log });
  serveTestIdentities(bus);
  for (const [name, failRate, signed] of [
    ['steady', 0, false],
    ['signed', 0, true],
    ['flaky30', 0.3, false],
    ['down-for-a-while', 0, false],
    ['steady-2', 0, true],
  ] as const) {
    endpoints.push({ name, port: await freePort(), server: null, ok: new Map(), requests: 0, badSignatures: 0, failRate, signed });
  }
  for (const ep of endpoints) if (ep.name !== 'down-for-a-while') await listen(ep);
  child = spawnWebhook();
  await waitReady();
}, 120_000);

afterAll(async () => {
  await kill(child);
  for (const ep of endpoints) await close(ep);
  await bus?.close();
  await pool?.end();
  await nats?.stop();
});

describe('webhook soak (separate process, SIGKILL ×2, NATS restart ×1)', () => {
  it('delivers every (event, endpoint) pair at least once and the log agrees', async () => {
    const config = testConfig({ DATABASE_URL: env.DATABASE_URL, NATS_URL: nats.url });
    const app = await buildGateway({ config, bus, pool, log: quietLogger('soak-gw'), routes: webhookRoutes });
    const user = randomUUID();
    for (const ep of endpoints) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/settings/webhooks',
        headers: { authorization: `Bearer test-${user}` },
        payload: { url: `http://127.0.0.1:${ep.port}/${ep.name}`, ...(ep.signed ? { secret: SECRET } : {}) },
      });
      expect(res.statusCode, res.body).toBe(201);
      ep.id = res.json<{ id: string }>().id;
    }

    const names: TaskEventName[] = ['task.created', 'task.updated', 'task.completed', 'task.deleted'];
    const taskIds: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      if (i === 250 || i === 750) {
        await kill(child);
        child = spawnWebhook();
      }
      if (i === 500) await nats.restart();
      const event = names[i % 4]!;
      const message = taskEvent(event, { id: randomUUID(), userId: user, title: `soak ${i}`, type: 'ONE_TIME', priority: 'NORMAL', createdAt: new Date() });
      taskIds.push(message.payload.task.id);
      const msgId = randomUUID();
      // the producer's relay retries until the PubAck (same msgId: JetStream drops duplicates)
      await until(async () => bus.publish(taskEvents[event], message, msgId).then(() => true, () => false), `publish ${i}`, 60_000);
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 20));
    }
    await waitReady();
    await listen(endpoints.find((e) => e.name === 'down-for-a-while')!);

    await until(
      async () => endpoints.every((ep) => taskIds.every((t) => ep.ok.has(t))),
      `all ${EVENTS * endpoints.length} pairs delivered (${endpoints.map((e) => `${e.name}: ${e.ok.size}`).join(', ')}; child stderr: ${childLog.slice(-500)})`,
      240_000,
    );
    const pending = async () => (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook.deliveries WHERE status <> 'delivered'")).rows[0]!.n;
    await until(async () => (await pending()) === 0, 'log settled', 60_000);

    for (const ep of endpoints) {
      expect(ep.badSignatures, ep.name).toBe(0);
      const { rows } = await pool.query<{ id: string; task_id: string; status: string }>(
        `SELECT d.id, (ev.body::json -> 'task' ->> 'id') AS task_id, d.status FROM webhook.deliveries d JOIN webhook.events ev ON ev.msg_id = d.event_msg_id WHERE d.endpoint_id = $1`,
        [ep.id],
      );
      // exactly one log entry per event for this endpoint, delivered, whose id the receiver saw with a 2xx answer
      expect(rows).toHaveLength(EVENTS);
      expect(new Set(rows.map((r) => r.task_id)).size).toBe(EVENTS);
      for (const r of rows) {
        expect(r.status).toBe('delivered');
        expect(ep.ok.get(r.task_id)?.has(r.id), `${ep.name} ${r.task_id}`).toBe(true);
      }
    }
    const flaky = endpoints.find((e) => e.name === 'flaky30')!;
    expect(flaky.requests).toBeGreaterThan(EVENTS);
    const retried = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook.deliveries WHERE endpoint_id = $1 AND attempts > 1', [endpoints.find((e) => e.name === 'down-for-a-while')!.id]);
    expect(retried.rows[0]!.n).toBeGreaterThan(0);
    await app.close();
  }, 420_000);
});
