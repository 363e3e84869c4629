import { createECDH, randomBytes } from 'node:crypto';
import { createNatsBus, createPool, startService, type RunningService } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { fileNats, quietLogger, testSystemConfig, until } from '../../../tools/testenv/index.ts';
import { createUserWithApiKey } from '../../../tools/testenv/users.ts';
import { createSchedulerService } from '../src/service.ts';
import { startReminderPeers, type ReminderPeers } from './reminder-peers.ts';

/**
 * The delivery bound, measured: 200 reminders due a few dozen milliseconds apart, delivered over
 * NATS to a real ntfy-compatible receiver and a real Web Push endpoint (which decrypts them), while
 * the scheduler runs as replicas of its own (own NATS connection, own pool): a second replica joins
 * during the run and the first is restarted. Every reminder must arrive exactly once on each channel,
 * within 60 s of its time at the 99th percentile (the bound; here it is about a second).
 */

const REMINDERS = 200;
const SPACING_MS = 60;
const nats = fileNats();
/** A VAPID key pair (P-256): the public key uncompressed, both base64url, as web-push takes them. */
const vapid = createECDH('prime256v1');
vapid.generateKeys();
const VAPID = { publicKey: vapid.getPublicKey().toString('base64url'), privateKey: vapid.getPrivateKey().toString('hex').padStart(64, '0') };
VAPID.privateKey = Buffer.from(VAPID.privateKey, 'hex').toString('base64url'); // 32 bytes, leading zeros kept
let peers: ReminderPeers;
let system: RunningSystem;
let config: RunningSystem['config'];
const replicas = new Map<string, RunningService & { close(): Promise<void> }>();

/** One scheduler replica, as its own process would run it (own NATS connection and pool). */
async function startReplica(name: string) {
  const log = quietLogger(name);
  const pool = createPool(config.DATABASE_URL, log, { application: name });
  const bus = await createNatsBus({ servers: config.NATS_URL!, name, log });
  const running = await startService(createSchedulerService(), { config, bus, pool, log });
  replicas.set(name, {
    ...running,
    async close() {
      await running.stop();
      await bus.close();
      await pool.end();
    },
  });
}
async function stopReplica(name: string) {
  await replicas.get(name)?.close();
  replicas.delete(name);
}

beforeAll(async () => {
  peers = await startReminderPeers();
  const base = await testSystemConfig(
    {
      OUTBOUND_ALLOW_LIST: '127.0.0.1',
      TOTP_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      PUBLIC_VAPID_PUBLIC_KEY: VAPID.publicKey,
      VAPID_PRIVATE_KEY: VAPID.privateKey,
      VAPID_CONTACT: 'mailto:ops@example.test',
    },
    { natsUrl: nats.url() },
  );
  config = { ...base, PUBLIC_APP_URL: `http://127.0.0.1:${base.PORT}` };
  // everything but the scheduler in one process; the scheduler as replicas beside it
  system = await startSystem(config, { log: quietLogger(), services: ALL_SERVICES.filter((s) => s.name !== 'scheduler') });
  await startReplica('scheduler-a');
}, 120_000);

afterAll(async () => {
  for (const name of [...replicas.keys()]) await stopReplica(name);
  await system?.stop();
  await peers?.stop();
});

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

describe('reminder delivery (NATS, scheduler replicas, real ntfy and Web Push peers)', () => {
  it(`${REMINDERS} reminders: each once on each channel, p99 delay ≤ 60 s, across a second replica and a restart`, async () => {
    const u = await createUserWithApiKey(system.pool);
    const call = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${system.url}${path}`, { method, headers: { authorization: u.authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await res.json()) as Record<string, unknown>;
      expect(res.status, `${method} ${path}: ${JSON.stringify(json)}`).toBeLessThan(300);
      return json;
    };
    await call('PUT', '/api/settings/notification-channels/ntfy', { config: { server: peers.url, topic: 'delivery' } });
    await call('PUT', '/api/settings/notification-channels/push', { config: {} });
    await call('POST', '/api/push/subscribe', peers.subscription);

    // the reminders are due from 20 s from now on, SPACING_MS apart: 200 creates take 2–3 s on a quiet
    // machine and over 6 s on a loaded one, and the first must not be due before the last is created
    const first = Date.now() + 20_000;
    const due = new Map<string, number>();
    for (let i = 0; i < REMINDERS; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, REMINDERS - i) }, async (_, j) => {
          const n = i + j;
          const at = first + n * SPACING_MS;
          due.set(`r-${n}`, at);
          await call('POST', '/api/tasks', { title: `r-${n}`, reminders: [{ at: new Date(at).toISOString() }] });
        }),
      );
    }
    expect(Date.now()).toBeLessThan(first); // all created before the first is due

    // a second replica joins a third into the run, and the first restarts half-way
    const span = REMINDERS * SPACING_MS;
    await new Promise((r) => setTimeout(r, Math.max(0, first + span / 3 - Date.now())));
    await startReplica('scheduler-b');
    await new Promise((r) => setTimeout(r, Math.max(0, first + span / 2 - Date.now())));
    await stopReplica('scheduler-a');
    await startReplica('scheduler-a2');

    await until(() => peers.ntfy.length >= REMINDERS && peers.push.length >= REMINDERS, `${REMINDERS} reminders on both channels (ntfy ${peers.ntfy.length}, push ${peers.push.length})`, 120_000);
    // anything extra would have come by now: the queue is empty and the relay idle
    await new Promise((r) => setTimeout(r, 1_500));

    for (const [channel, messages] of [['ntfy', peers.ntfy], ['push', peers.push]] as const) {
      const byTitle = new Map<string, number[]>();
      for (const m of messages) byTitle.set(m.title, [...(byTitle.get(m.title) ?? []), m.receivedAt]);
      const duplicates = [...byTitle.values()].filter((v) => v.length > 1).length;
      const missing = [...due.keys()].filter((t) => !byTitle.has(t)).length;
      const delays = [...due].filter(([t]) => byTitle.has(t)).map(([t, at]) => byTitle.get(t)![0]! - at).sort((a, b) => a - b);
      const figures = { channel, delivered: byTitle.size, duplicates, missing, p50Ms: percentile(delays, 50), p99Ms: percentile(delays, 99), maxMs: delays[delays.length - 1], minMs: delays[0] };
      console.log(`reminder delivery: ${JSON.stringify(figures)}`);
      expect(duplicates, channel).toBe(0);
      expect(missing, channel).toBe(0);
      expect(figures.minMs, `${channel}: none before its time`).toBeGreaterThanOrEqual(0);
      expect(figures.p99Ms, channel).toBeLessThanOrEqual(60_000);
    }
    // the buttons travel on both channels
    expect(peers.ntfy[0]!.actions?.map((a) => a.label)).toEqual(['Done', 'Snooze 1 h']);
    expect(peers.push[0]!.actions?.map((a) => a.action)).toEqual(['done', 'snooze']);
    const { rows } = await system.pool.query<{ outcome: string; n: number }>('SELECT outcome, count(*)::int AS n FROM scheduler.reminder_queue GROUP BY outcome');
    expect(rows).toEqual([{ outcome: 'sent', n: REMINDERS }]);
  }, 240_000);
});
