import { spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, encryptSecret, freePort, type Config, type Pool } from '@tasksvc/runtime';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { fileNats, quietLogger, serveTestIdentities, testConfig, testSystemConfig } from '../../../tools/testenv/index.ts';
import { callAs, startReceiver, until, type Receiver } from '../test/support.ts';
import { deriveSubkeys, parseKeyRing, type RingKey, type RingService } from '@tasksvc/proto/ring-keys.ts';

/**
 * Keys per purpose (issue 54): webhook signing secrets and channel secrets are sealed under
 * SECRETS_KEYRING, TOTP secrets under TOTP_ENCRYPTION_KEY. The real chain (tasks → outbox → NATS →
 * webhook; notifier) is restarted with each key rotated in turn against the same database:
 * a task event's delivery still arrives signed with the secret the user set.
 */

const nats = fileNats();
const root = new URL('../../..', import.meta.url).pathname;
const hex = () => randomBytes(32).toString('hex');
const TOTP_1 = hex();
const TOTP_2 = hex();
const RING_A = `a:${hex()}`;
const RING_B = `b:${hex()}`;
const HOOK_SECRET = 'rotation-signing-secret';
const ALERT_SECRET = 'rotation-alert-secret';
const user = randomUUID();

let rx: Receiver;
let sys: RunningSystem | undefined;
let base: Config;
let db: Pool;

const call = (method: string, url: string, body?: unknown) => callAs(sys!.url, user, method, url, body);
const sign = (secret: string, raw: Buffer) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

/** (Re)start tasks, notifier, webhook and the gateway on the same database and NATS with these keys. */
async function restart(keys: { TOTP_ENCRYPTION_KEY?: string; SECRETS_KEYRING?: string; SECRETS_SUBKEYS?: string }): Promise<void> {
  await sys?.stop();
  const config = testConfig({ DATABASE_URL: base.DATABASE_URL, NATS_URL: base.NATS_URL, HOST: '127.0.0.1', PORT: String(await freePort()), OUTBOUND_ALLOW_LIST: '127.0.0.1', ...keys });
  sys = await startSystem(config, { services: ALL_SERVICES.filter((s) => ['tasks', 'notifier', 'webhook', 'gateway'].includes(s.name)) });
  serveTestIdentities(sys.bus);
}

/** The key id each stored secret names (`legacy`: the three-part form sealed under TOTP_ENCRYPTION_KEY). */
async function storedKeyIds(): Promise<string[]> {
  const { rows } = await db.query<{ v: string }>(
    `SELECT secret_enc AS v FROM webhook.endpoints WHERE user_id = $1 UNION ALL SELECT secrets_enc FROM notifier.channels WHERE user_id = $1`,
    [user],
  );
  return rows.map((r) => (r.v.startsWith('kr1:') ? r.v.split(':')[1]! : 'legacy'));
}

/** Create a task; its task.created delivery arrives signed with the user's secret. */
async function deliveredSigned(title: string): Promise<void> {
  expect((await call('POST', '/api/tasks', { title })).status).toBe(201);
  const req = await until(async () => rx.requests.find((r) => r.path === '/hook' && JSON.parse(r.raw.toString()).task?.title === title), `the delivery of "${title}"`, 30_000);
  expect(req.headers['x-service-signature']).toBe(sign(HOOK_SECRET, req.raw));
}

/** The HTTP Alert channel's test notification arrives signed with the channel's secret. */
async function alertSigned(): Promise<void> {
  const before = rx.requests.length;
  const res = await call('POST', '/api/settings/notification-channels/http-alert/test');
  expect(res.json).toMatchObject({ ok: true, error: null });
  const req = rx.requests.slice(before).find((r) => r.path === '/alert')!;
  expect(req.headers['x-service-signature']).toBe(sign(ALERT_SECRET, req.raw));
}

beforeAll(async () => {
  rx = await startReceiver();
  base = await testSystemConfig({}, { natsUrl: nats.url() });
  db = createPool(base.DATABASE_URL, quietLogger('rotation'));
}, 60_000);

afterAll(async () => {
  await sys?.stop();
  await db?.end();
  await rx?.close();
});

describe('keys per purpose', () => {
  it('secrets stored under TOTP_ENCRYPTION_KEY by the previous release still work after the upgrade, and move to the ring', async () => {
    await restart({ TOTP_ENCRYPTION_KEY: TOTP_1, SECRETS_KEYRING: RING_A });
    expect((await call('POST', '/api/settings/webhooks', { url: `${rx.url}/hook`, secret: HOOK_SECRET, events: ['task.created'] })).status).toBe(201);
    expect((await call('PUT', '/api/settings/notification-channels/http-alert', { config: { url: `${rx.url}/alert`, secret: ALERT_SECRET } })).status).toBe(200);
    expect(await storedKeyIds()).toEqual(['a', 'a']);
    // what the previous release stored: the same secrets sealed directly under TOTP_ENCRYPTION_KEY
    await db.query('UPDATE webhook.endpoints SET secret_enc = $2 WHERE user_id = $1', [user, encryptSecret(TOTP_1, HOOK_SECRET)]);
    await db.query('UPDATE notifier.channels SET secrets_enc = $2 WHERE user_id = $1', [user, encryptSecret(TOTP_1, JSON.stringify({ secret: ALERT_SECRET }))]);
    expect(await storedKeyIds()).toEqual(['legacy', 'legacy']);
    expect((await keys(['status'], { SECRETS_KEYRING: RING_A, TOTP_ENCRYPTION_KEY: TOTP_1 })).out).toContain('pre-ring values: 2 (under TOTP_ENCRYPTION_KEY: keep it');

    await restart({ TOTP_ENCRYPTION_KEY: TOTP_1, SECRETS_KEYRING: RING_A });
    await until(async () => (await storedKeyIds()).every((k) => k === 'a'), 'the legacy secrets re-sealed under key a at start', 20_000);
    await deliveredSigned('after the upgrade');
    await alertSigned();
  }, 120_000);

  it('rotating TOTP_ENCRYPTION_KEY leaves webhook and channel secrets readable', async () => {
    await restart({ TOTP_ENCRYPTION_KEY: TOTP_2, SECRETS_KEYRING: RING_A });
    await deliveredSigned('after the TOTP key rotation');
    await alertSigned();
    // and without TOTP_ENCRYPTION_KEY at all (the webhook and notifier services no longer need it)
    await restart({ TOTP_ENCRYPTION_KEY: undefined, SECRETS_KEYRING: RING_A });
    await deliveredSigned('without a TOTP key');
  }, 120_000);

  it('rotating SECRETS_KEYRING with the old key kept second: still delivered, re-sealed, then the old key retired', async () => {
    await restart({ SECRETS_KEYRING: `${RING_B},${RING_A}` });
    await deliveredSigned('after the ring rotation');
    await alertSigned();
    await until(async () => (await storedKeyIds()).every((k) => k === 'b'), 'the secrets re-sealed under key b at start', 20_000);
    await restart({ SECRETS_KEYRING: RING_B });
    await deliveredSigned('with the old key retired');
    await alertSigned();
  }, 120_000);

  it('a key removed too early: the delivery fails with the reason, nothing is sent unsigned', async () => {
    await restart({ SECRETS_KEYRING: RING_A });
    const title = 'under a key no longer listed';
    expect((await call('POST', '/api/tasks', { title })).status).toBe(201);
    const hooks = (await call('GET', '/api/settings/webhooks')).json.webhooks as { id: string }[];
    const failed = await until(async () => {
      const log = (await call('GET', `/api/settings/webhooks/${hooks[0]!.id}/deliveries`)).json.deliveries as { status: string; error: string | null }[];
      return log.find((d) => d.error?.includes('SECRETS_KEYRING'));
    }, 'the failed delivery in the log', 30_000);
    expect(failed.error).toMatch(/key "b".*SECRETS_KEYRING no longer lists/);
    expect(rx.requests.some((r) => r.path === '/hook' && JSON.parse(r.raw.toString()).task?.title === title)).toBe(false);
  }, 120_000);

  it('`node tools/keys.ts` counts the secrets per key and re-seals them under the current key', async () => {
    const status = await keys(['status'], RING_A);
    expect(status.out).toContain('webhook.endpoints.secret_enc: b: 1\n');
    expect(status.out).toContain('pre-ring values: none (the webhook and notifier services no longer need TOTP_ENCRYPTION_KEY)');
    expect(status.out).toContain('notifier.channels.secrets_enc: b: 1\n');
    expect(status.code).toBe(0);
    // key b is gone from this ring: nothing opens them, and the command says so
    const stuck = await keys(['reseal'], RING_A);
    expect(stuck.out).toContain('webhook.endpoints.secret_enc: b: 1 (re-sealed 0, unreadable 1)');
    expect(stuck.code).toBe(1);
    const moved = await keys(['reseal'], `${RING_C},${RING_B}`);
    expect(moved.out).toContain('webhook.endpoints.secret_enc: c: 1 (re-sealed 1, unreadable 0)');
    expect(moved.out).toContain('notifier.channels.secrets_enc: c: 1 (re-sealed 1, unreadable 0)');
    expect(moved.code).toBe(0);
    await restart({ SECRETS_KEYRING: RING_C });
    await deliveredSigned('after the command re-sealed');
    await alertSigned();
  }, 120_000);

  it('each service on its derived ring (SECRETS_SUBKEYS): what the master sealed opens, a rotation flows through, keys.ts works per service, and the master opens it again', async () => {
    // the split the operator and compose make: no master, each service its own subkeys
    await restart({ SECRETS_KEYRING: undefined, SECRETS_SUBKEYS: derived(RING_C) });
    await deliveredSigned('on the derived rings');
    await alertSigned();
    // a rotation through the derived rings: the new key first, the old kept; the starts re-seal
    await restart({ SECRETS_KEYRING: undefined, SECRETS_SUBKEYS: derived(`${RING_D},${RING_C}`) });
    await deliveredSigned('after a rotation of the derived rings');
    await until(async () => (await storedKeyIds()).every((k) => k === 'd'), 'the secrets re-sealed under key d at start', 20_000);
    // keys.ts with the webhook's derived ring alone: its table only
    const webhookOnly = { SECRETS_SUBKEYS: deriveSubkeys(ring(`${RING_E},${RING_D}`), 'webhook') };
    const status = await keys(['status'], webhookOnly);
    expect(status.out).toContain('webhook.endpoints.secret_enc: d: 1\n');
    expect(status.out).toMatch(/notifier\.channels\.secrets_enc: skipped \(SECRETS_SUBKEYS holds no key for notifier\/channel-secrets/);
    expect(status.code).toBe(0);
    const resealed = await keys(['reseal'], webhookOnly);
    expect(resealed.out).toContain('webhook.endpoints.secret_enc: e: 1 (re-sealed 1, unreadable 0)');
    expect(resealed.out).toContain('current key: e (from SECRETS_SUBKEYS, a derived ring)');
    expect(await storedKeyIds()).toEqual(['e', 'd']);
    const notifierResealed = await keys(['reseal'], { SECRETS_SUBKEYS: deriveSubkeys(ring(`${RING_E},${RING_D}`), 'notifier') });
    expect(notifierResealed.out).toContain('notifier.channels.secrets_enc: e: 1 (re-sealed 1, unreadable 0)');
    // and back on the master ring (what `npm start` takes): values sealed by the derived rings open
    await restart({ SECRETS_KEYRING: RING_E });
    await deliveredSigned('back on the master ring');
    await alertSigned();
  }, 180_000);
});

const RING_C = `c:${hex()}`;
const RING_D = `d:${hex()}`;
const RING_E = `e:${hex()}`;
const ring = (spec: string) => parseKeyRing(spec) as RingKey[];
/** Both ring services' derived rings in one variable (the in-process system shares one environment). */
const derived = (spec: string) => (['webhook', 'notifier'] as RingService[]).map((s) => deriveSubkeys(ring(spec), s)).join(',');

/** Run `node tools/keys.ts` with these ring variables. */
const keys = (args: string[], ringEnv: string | Record<string, string>) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    const rings = typeof ringEnv === 'string' ? { SECRETS_KEYRING: ringEnv } : ringEnv;
    const child = spawn(process.execPath, [join(root, 'tools', 'keys.ts'), ...args], { cwd: root, env: { PATH: process.env.PATH, DATABASE_URL: base.DATABASE_URL, AUTH_TRUST_HOST: 'true', ...rings } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
