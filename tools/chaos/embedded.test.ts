import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createLogger, createPool, freePort, verifySignature, type Pool } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';

const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');
const SECRET = 'embedded-chaos-secret';
const USERS = 5;

/** Records every signed webhook (event + task id) and every HTTP Alert, per user (the path names the user). */
function startReceiver(): Promise<{ server: Server; base: string; webhooks: Set<string>; alerts: Map<string, number>; badSignatures: () => number }> {
  const webhooks = new Set<string>();
  const alerts = new Map<string, number>();
  let bad = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      if (!verifySignature(SECRET, raw, req.headers['x-service-signature'] as string | undefined)) {
        bad++;
        res.writeHead(401).end();
        return;
      }
      const body = JSON.parse(raw.toString()) as { event: string; task?: { id: string }; title?: string };
      if (req.url?.startsWith('/hook')) webhooks.add(`${body.event} ${body.task!.id}`);
      else alerts.set(`${req.url} ${body.title}`, (alerts.get(`${req.url} ${body.title}`) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, webhooks, alerts, badSignatures: () => bad })),
  );
}

// `npm start` without NATS_URL: the whole system in one process on the in-process bus. Killed with
// SIGKILL under write load and restarted on the same database, it must still hand every event of
// every acknowledged write to every consumer (webhook deliveries, the game, the notifier).
describe('embedded mode under kill -9', () => {
  let pool: Pool;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let env: Record<string, string>;
  let url: string;
  let child: ChildProcess | undefined;
  let output = '';

  const launch = () => {
    child = spawn(node, [join(root, 'tools', 'start.ts')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
    };
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
  };
  const healthy = async () => {
    const res = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
    await res?.arrayBuffer();
    return res?.status === 200;
  };
  const kill = async () => {
    const c = child!;
    if (c.exitCode !== null || c.signalCode) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    const DATABASE_URL = await testDatabase('chaos_embedded');
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL,
      AUTH_SECRET: 'chaos-secret-chaos-secret-chaos-secret-00',
      AUTH_TRUST_HOST: 'true',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RUNTIME_ENV: 'test',
      DISABLE_UPDATE_CHECK: 'true',
      OUTBOUND_ALLOW_LIST: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE: '1,1,2,2,3',
      SECRETS_KEYRING: `chaos:${'cd'.repeat(32)}`,
    };
    launch();
    await until(healthy, 'the first start', 120_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
    pool = createPool(DATABASE_URL, createLogger('chaos', 'silent'));
  });
  afterAll(async () => {
    if (child) await kill();
    await pool?.end();
    receiver?.server.close();
  });

  it('hands every event of every acknowledged write to the webhook, game and notifier consumers after a SIGKILL and restart', async () => {
    const users: { userId: string; headers: Record<string, string> }[] = [];
    for (let u = 0; u < USERS; u++) {
      const user = await createUserWithApiKey(pool);
      const headers = { authorization: user.authorization, 'content-type': 'application/json' };
      const hook = await fetch(`${url}/api/settings/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: `${receiver.base}/hook`, secret: SECRET, events: ['task.created', 'task.completed'] }),
      });
      expect(hook.status, await hook.text()).toBe(201);
      const alert = await fetch(`${url}/api/settings/notification-channels/http-alert`, {
        method: 'PUT',
        headers,
        body: JSON.stringify({ enabled: true, config: { url: `${receiver.base}/alert/${user.userId}`, secret: SECRET } }),
      });
      expect(alert.status, await alert.text()).toBe(200);
      users.push({ ...user, headers });
    }

    // Each writer creates a task and completes it (completions unlock achievements: game → notifier).
    const acknowledged: string[] = [];
    let running = true;
    const writer = async (user: (typeof users)[number]) => {
      let i = 0;
      while (running) {
        try {
          const res = await fetch(`${url}/api/tasks`, { method: 'POST', headers: user.headers, body: JSON.stringify({ title: `embedded chaos ${i++}` }), signal: AbortSignal.timeout(10_000) });
          if (res.status !== 201) {
            await res.arrayBuffer();
            await new Promise((r) => setTimeout(r, 50)); // the process is down: try again shortly
            continue;
          }
          const id = ((await res.json()) as { task: { id: string } }).task.id;
          acknowledged.push(`task.created ${id}`);
          const done = await fetch(`${url}/api/tasks/${id}/complete`, { method: 'POST', headers: user.headers, body: '{}', signal: AbortSignal.timeout(10_000) });
          await done.arrayBuffer();
          if (done.status === 200) acknowledged.push(`task.completed ${id}`);
        } catch {
          // refused or cut off while the process is down: not acknowledged, so nothing is owed
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    const writers = users.map((u) => writer(u));

    await until(() => acknowledged.length >= 400, 'writes before the kill', 120_000);
    await kill();
    const atKill = acknowledged.length;
    launch();
    await until(healthy, 'the restart', 120_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${output}`);
    });
    await until(() => acknowledged.length >= atKill + 100, 'writes after the restart', 120_000);
    running = false;
    await Promise.all(writers);

    // every acknowledged write's event reached the webhook consumer and was delivered…
    await until(() => acknowledged.every((e) => receiver.webhooks.has(e)), 'every webhook delivered', 180_000).catch(() => undefined);
    const undelivered = acknowledged.filter((e) => !receiver.webhooks.has(e));
    // …and every achievement the game committed reached the notifier and went out on HTTP Alert
    const unlocked = await pool.query<{ user_id: string; achievement_key: string }>('SELECT user_id, achievement_key FROM tasks.user_achievements');
    const { rows: outbox } = await pool.query<{ payload: { userId: string; title: string } }>(`SELECT payload FROM tasks_game.outbox WHERE subject = 'events.notify.requested'`);
    const expected = outbox.map((r) => `/alert/${r.payload.userId} ${r.payload.title}`);
    await until(() => expected.every((k) => receiver.alerts.has(k)), 'every achievement alert delivered', 180_000).catch(() => undefined);
    const unalerted = expected.filter((k) => !receiver.alerts.has(k));

    expect(acknowledged.length).toBeGreaterThan(atKill);
    expect(unlocked.rows.length).toBeGreaterThanOrEqual(USERS);
    expect(outbox.length).toBe(unlocked.rows.length);
    expect(undelivered).toEqual([]);
    expect(unalerted).toEqual([]);
    expect(receiver.badSignatures()).toBe(0);
  }, 600_000);
});
