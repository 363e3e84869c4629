import { execFileSync } from 'node:child_process';
import { createECDH, createHmac, createPublicKey, randomBytes, randomUUID, timingSafeEqual, verify as verifySig } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildGateway, gatewayService } from '@tasksvc/gateway';
import { CHANNEL_TESTS_PER_HOUR, notificationRequested, notifyRoutes, type NotificationRequest } from '@tasksvc/proto';
import { createMemoryBus, createNatsBus, createPool, freePort, migrate, startService, type Bus, type Pool, type RunningService } from '@tasksvc/runtime';
import * as ece from 'http_ece';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import webpush from 'web-push';
import { fileNats, quietLogger, serveTestIdentities, testConfig, testSystemConfig, until } from '../../../tools/testenv/index.ts';
import { confirmKeys } from './channels/email-confirmation.ts';
import { CONFIRM_LIFETIME_MS, confirmLink } from './domain/confirm-links.ts';
import { notifierService } from './service.ts';

// ---------------------------------------------------------------- harness

interface Harness {
  bus: Bus;
  pool: Pool;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test responses are inspected loosely
  call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, userId: string, body?: unknown): Promise<{ status: number; json: any; headers: Record<string, unknown> }>;
  /** a GET without credentials, as a link opened from a mail */
  open(url: string): Promise<{ status: number; body: string; contentType: string | undefined }>;
  stop(): Promise<void>;
}

/** `natsUrl`: over NATS (this file's own server), else the in-process bus. */
async function startHarness(overrides: Record<string, string | undefined>, natsUrl?: string): Promise<Harness> {
  const config = await testSystemConfig(overrides, { natsUrl });
  const log = quietLogger('notifier-test');
  const pool = createPool(config.DATABASE_URL, log);
  const bus = config.NATS_URL ? await createNatsBus({ servers: config.NATS_URL, name: 'notifier-test', log }) : createMemoryBus(log);
  const identity = serveTestIdentities(bus);
  const svc: RunningService = await startService(notifierService, { config, bus, pool, log });
  // the gateway's schema holds the per-user rate-limit counters
  await migrate(pool, { ...gatewayService.migrations!, log });
  const app = await buildGateway({ config, bus, pool, log, routes: notifyRoutes });
  return {
    bus,
    pool,
    async call(method, url, userId, body) {
      const res = await app.inject({ method, url, headers: { authorization: `Bearer test-${userId}`, 'user-agent': 'vitest-device' }, ...(body === undefined ? {} : { payload: body as object }) });
      return { status: res.statusCode, json: res.body ? res.json() : null, headers: res.headers };
    },
    async open(url) {
      const res = await app.inject({ method: 'GET', url });
      return { status: res.statusCode, body: res.body, contentType: res.headers['content-type'] };
    },
    async stop() {
      await app.close();
      await svc.stop();
      await identity.stop();
      await bus.close();
      await pool.end();
    },
  };
}


// ---------------------------------------------------------------- real local peers

interface Hit {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}
const hits: Hit[] = [];
let responder: (h: Hit) => { status: number; body?: string } | null = () => null;
let http: Server;
let rxUrl = '';

/** One local HTTP peer standing in for the ntfy server, the Pushover and Telegram APIs, HTTP Alert receivers and push services. */
async function startHttpPeer(): Promise<void> {
  http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = { path: req.url ?? '/', headers: req.headers, raw: Buffer.concat(chunks) };
      hits.push(hit);
      const custom = responder(hit);
      if (custom) return res.writeHead(custom.status, { 'content-type': 'application/json' }).end(custom.body ?? '{}');
      if (hit.path.startsWith('/push/gone')) return res.writeHead(410).end();
      if (hit.path.startsWith('/push/')) return res.writeHead(201).end();
      if (hit.path.startsWith('/pushover/')) return res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":1,"request":"r-1"}');
      if (hit.path.startsWith('/telegram/')) return res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"result":{"message_id":1}}');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"x"}');
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  rxUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
}

interface Mail {
  parsed: ParsedMail;
  secure: boolean;
  user: string | undefined;
}
const mails: Mail[] = [];
let smtp: SMTPServer;
let smtpPort = 0;
let certFile = '';
/** The SMTP peer's settings (known once beforeAll started it), for a harness that mails. */
const smtpEnv = () => ({
  SMTP_HOST: '127.0.0.1',
  SMTP_PORT: String(smtpPort),
  SMTP_USER: 'mailer',
  SMTP_PASS: 'mail-pass',
  SMTP_FROM: 'Task Service <tasks@example.test>',
  SMTP_TLS_CA_FILE: certFile,
});

/** smtp-server offering STARTTLS with a self-signed certificate, requiring authentication. */
async function startSmtpPeer(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'smtp-'));
  certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', certFile, '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    { stdio: 'ignore' },
  );
  smtp = new SMTPServer({
    key: readFileSync(join(dir, 'key.pem')),
    cert: readFileSync(certFile),
    secure: false,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === 'mailer' && auth.password === 'mail-pass') cb(null, { user: auth.username });
      else cb(new Error('bad credentials'));
    },
    // a mail server refusing a recipient, in words that try to fake a log line
    onRcptTo(address, _session, cb) {
      if (address.address !== 'nobody@example.test') return cb();
      cb(Object.assign(new Error('5.1.1 <nobody@example.test>: mailbox unavailable\n\u001b[31mFAKE LOG LINE'), { responseCode: 550 }));
    },
    onData(stream, session, cb) {
      simpleParser(stream)
        .then((parsed) => {
          mails.push({ parsed, secure: session.secure, user: session.user });
          cb();
        })
        .catch((err: Error) => cb(err));
    },
  });
  smtpPort = await freePort();
  await new Promise<void>((r) => smtp.listen(smtpPort, '127.0.0.1', r));
}

const mailsTo = (address: string) => mails.filter((m) => m.parsed.to && !Array.isArray(m.parsed.to) && m.parsed.to.value[0]?.address === address);
const CONFIRM_SUBJECT = 'Confirm your address for Task Service notifications';

/** The confirmation link of the latest confirmation mail to `address`, as an application path. */
function confirmationPath(address: string, app: string): string {
  const mail = mailsTo(address).filter((m) => m.parsed.subject === CONFIRM_SUBJECT).at(-1);
  expect(mail, `a confirmation mail to ${address}`).toBeDefined();
  const link = /Confirm this address: (\S+)/.exec(mail!.parsed.text ?? '')?.[1];
  expect(link?.startsWith(`${app}/api/notification-channels/email/confirm/`)).toBe(true);
  return link!.slice(app.length);
}

/** A browser's push subscription: our own P-256 key pair and auth secret, so the peer can decrypt. */
function fakeBrowser(path: string) {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, subscription: { endpoint: `${rxUrl}${path}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } } };
}

/** RFC 8292: `Authorization: vapid t=<ES256 JWT>, k=<public key>`; returns the verified claims. */
function verifyVapid(header: string | undefined, expectedKey: string): Record<string, unknown> {
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '');
  if (!m) throw new Error(`no VAPID authorization: ${header}`);
  const [h, p, s] = m[1]!.split('.');
  expect(m[2]).toBe(expectedKey);
  const raw = Buffer.from(m[2]!, 'base64url');
  const key = createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33, 65).toString('base64url') }, format: 'jwk' });
  const ok = verifySig('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s!, 'base64url'));
  if (!ok) throw new Error('VAPID signature does not verify');
  expect(JSON.parse(Buffer.from(h!, 'base64url').toString())).toMatchObject({ alg: 'ES256', typ: 'JWT' });
  return JSON.parse(Buffer.from(p!, 'base64url').toString()) as Record<string, unknown>;
}

function hmacOk(secret: string, raw: Buffer, header: string | string[] | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`);
  const given = Buffer.from(typeof header === 'string' ? header : '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

// ---------------------------------------------------------------- tests

const VAPID = webpush.generateVAPIDKeys();
const CONTACT = 'mailto:ops@example.test';
const KEY = randomBytes(32).toString('hex');
const APP = 'https://tasks.example.test';
const BOT = '123456789:AAF-test_token_abcdefghijklmnop';
const APP_TOKEN = 'azGDORePK8gMaC0QOYAMyEEuzJnyUi';
const USER_KEY = 'uQiRzpo4DXghDmr9QzzfQu27cmVRsG';
const nats = fileNats();
let h: Harness;
const alice = randomUUID();
const bob = randomUUID();

beforeAll(async () => {
  await Promise.all([startHttpPeer(), startSmtpPeer()]);
  h = await startHarness(
    {
      OUTBOUND_ALLOW_LIST: '127.0.0.1',
      TOTP_ENCRYPTION_KEY: KEY,
      PUBLIC_APP_URL: APP,
      PUBLIC_VAPID_PUBLIC_KEY: VAPID.publicKey,
      VAPID_PRIVATE_KEY: VAPID.privateKey,
      VAPID_CONTACT: CONTACT,
      ...smtpEnv(),
      PUSHOVER_API_URL: `${rxUrl}/pushover`,
      TELEGRAM_API_URL: `${rxUrl}/telegram`,
    },
    nats.url(),
  );
}, 120_000);

afterAll(async () => {
  await h?.stop();
  await new Promise((r) => smtp?.close(() => r(undefined)));
  http?.closeAllConnections();
  await new Promise((r) => http?.close(r));
});

const notify = (n: NotificationRequest) => h.bus.publish(notificationRequested, n, randomUUID());
const hitsAt = (prefix: string) => hits.filter((x) => x.path.startsWith(prefix));

describe('notification channels against real local peers', () => {
  const alicePhone = () => browsers.phone!;
  const browsers: { phone?: ReturnType<typeof fakeBrowser>; stale?: ReturnType<typeof fakeBrowser> } = {};

  it('lists six channels, all available when the operator configured SMTP and VAPID', async () => {
    const res = await h.call('GET', '/api/settings/notification-channels', alice);
    expect(res.status).toBe(200);
    expect(res.json.channels.map((c: { type: string }) => c.type)).toEqual(['push', 'ntfy', 'pushover', 'telegram', 'email', 'http-alert']);
    expect(res.json.channels.every((c: { available: boolean; configured: boolean }) => c.available && !c.configured)).toBe(true);
    expect((await h.call('GET', '/api/push/vapid-public-key', alice)).json).toEqual({ publicKey: VAPID.publicKey });
  });

  it('configures every channel; secrets are encrypted at rest and never returned', async () => {
    const put = (type: string, config: unknown) => h.call('PUT', `/api/settings/notification-channels/${type}`, alice, { config });
    const ntfy = await put('ntfy', { server: `${rxUrl}/ntfy`, topic: 'alice-tasks', token: 'tk_alice_secret', priority: 4 });
    expect(ntfy.status).toBe(200);
    expect(ntfy.json).toMatchObject({ type: 'ntfy', configured: true, enabled: true, config: { server: `${rxUrl}/ntfy`, topic: 'alice-tasks', priority: 4, hasToken: true } });
    expect((await put('pushover', { appToken: APP_TOKEN, userKey: USER_KEY })).json.config).toMatchObject({ hasAppToken: true, hasUserKey: true });
    expect((await put('telegram', { botToken: BOT, chatId: '-100123456' })).json.config).toEqual({ chatId: '-100123456', hasBotToken: true });
    const email = await put('email', { address: 'alice@example.test' });
    expect(email.json).toMatchObject({ config: { address: 'alice@example.test' }, confirmation: 'waiting' });
    // seeding: alice opens the link mailed to her (issue 56 #2), so her address receives what follows
    expect((await h.open(confirmationPath('alice@example.test', APP))).status).toBe(200);
    expect((await put('http-alert', { url: `${rxUrl}/alert`, secret: 'alert-secret-1' })).json.config).toEqual({ url: `${rxUrl}/alert`, hasSecret: true });
    browsers.phone = fakeBrowser('/push/phone');
    browsers.stale = fakeBrowser('/push/gone');
    expect((await h.call('POST', '/api/push/subscribe', alice, browsers.phone.subscription)).status).toBe(201);
    expect((await h.call('POST', '/api/push/subscribe', alice, browsers.stale.subscription)).status).toBe(201);
    const subs = await h.call('GET', '/api/push/subscriptions', alice);
    expect(subs.json.subscriptions).toHaveLength(2);
    expect(subs.json.subscriptions[0].userAgent).toBe('vitest-device');

    const list = await h.call('GET', '/api/settings/notification-channels', alice);
    const text = JSON.stringify(list.json);
    for (const secret of ['tk_alice_secret', APP_TOKEN, USER_KEY, BOT, 'alert-secret-1']) expect(text).not.toContain(secret);
    expect(list.json.channels.find((c: { type: string }) => c.type === 'push')).toMatchObject({ configured: true, enabled: true, config: { devices: 2 } });
    const stored = await h.pool.query<{ secrets_enc: string }>("SELECT secrets_enc FROM notifier.channels WHERE user_id = $1 AND type = 'telegram'", [alice]);
    expect(stored.rows[0]!.secrets_enc).not.toContain(BOT);
    // updating without the secret keeps it
    expect((await put('telegram', { chatId: '-100999' })).json.config).toEqual({ chatId: '-100999', hasBotToken: true });
    expect((await put('telegram', { botToken: BOT, chatId: '-100123456' })).status).toBe(200);
  });

  it('delivers one notification on all six channels, each in the shape its peer expects', async () => {
    const n: NotificationRequest = { userId: alice, title: 'Streak at risk 🔥', body: 'Complete one task today to keep your 12-day streak.', url: '/tasks', tag: 'streak', dedupeKey: `streak:${alice}:2026-11-22` };
    await notify(n);
    const notificationMail = () => mails.find((m) => m.parsed.subject === n.title);
    await until(() => notificationMail() !== undefined && hitsAt('/ntfy').length >= 1 && hitsAt('/pushover').length >= 1 && hitsAt('/telegram').length >= 1 && hitsAt('/alert').length >= 1 && hitsAt('/push/phone').length >= 1 && hitsAt('/push/gone').length >= 1, 'all six channels');

    // ntfy: JSON publish to the server root
    const ntfy = hitsAt('/ntfy')[0]!;
    expect(ntfy.path).toBe('/ntfy/');
    expect(ntfy.headers['content-type']).toBe('application/json');
    expect(ntfy.headers.authorization).toBe('Bearer tk_alice_secret');
    expect(JSON.parse(ntfy.raw.toString())).toEqual({ topic: 'alice-tasks', title: n.title, message: n.body, tags: ['streak'], priority: 4, click: `${APP}/tasks` });

    // Pushover: form-encoded Message API
    const po = hitsAt('/pushover')[0]!;
    expect(po.path).toBe('/pushover/1/messages.json');
    expect(po.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(po.raw.toString()))).toEqual({ token: APP_TOKEN, user: USER_KEY, title: n.title, message: n.body, url: `${APP}/tasks`, url_title: 'Open Task Service' });

    // Telegram: Bot API sendMessage
    const tg = hitsAt('/telegram')[0]!;
    expect(tg.path).toBe(`/telegram/bot${BOT}/sendMessage`);
    expect(JSON.parse(tg.raw.toString())).toEqual({ chat_id: '-100123456', text: `${n.title}\n\n${n.body}\n\n${APP}/tasks`, disable_web_page_preview: true });

    // HTTP Alert: exactly the spec's body, signed over the raw bytes
    const alert = hitsAt('/alert')[0]!;
    const body = JSON.parse(alert.raw.toString()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['event', 'title', 'body', 'url', 'tag', 'timestamp']);
    expect(body).toMatchObject({ event: 'service.notification', title: n.title, body: n.body, url: '/tasks', tag: 'streak' });
    expect(new Date(body.timestamp as string).toISOString()).toBe(body.timestamp);
    expect(alert.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(hmacOk('alert-secret-1', alert.raw, alert.headers['x-service-signature'])).toBe(true);
    expect(hmacOk('wrong-secret', alert.raw, alert.headers['x-service-signature'])).toBe(false);

    // Web Push: the endpoint decrypts aes128gcm and verifies the VAPID JWT
    const push = hitsAt('/push/phone')[0]!;
    expect(push.headers['content-encoding']).toBe('aes128gcm');
    expect(Number(push.headers.ttl)).toBeGreaterThan(0);
    expect(push.headers.urgency).toBe('normal');
    const plain = ece.decrypt(push.raw, { version: 'aes128gcm', privateKey: alicePhone().ecdh, authSecret: alicePhone().auth });
    expect(JSON.parse(plain.toString('utf8'))).toEqual({ title: n.title, body: n.body, url: '/tasks', tag: 'streak' });
    const claims = verifyVapid(push.headers.authorization, VAPID.publicKey);
    expect(claims.aud).toBe(rxUrl);
    expect(claims.sub).toBe(CONTACT);
    expect(claims.exp as number).toBeGreaterThan(Date.now() / 1000);

    // Email: received over STARTTLS, authenticated, parsed by mailparser
    const mail = notificationMail()!;
    expect(mail.secure).toBe(true);
    expect(mail.user).toBe('mailer');
    expect(mail.parsed.from?.value[0]).toMatchObject({ address: 'tasks@example.test', name: 'Task Service' });
    expect(mail.parsed.to && !Array.isArray(mail.parsed.to) ? mail.parsed.to.value[0]?.address : null).toBe('alice@example.test');
    expect(mail.parsed.subject).toBe(n.title);
    expect(mail.parsed.text).toContain(n.body);
    expect(mail.parsed.text).toContain(`${APP}/tasks`);
    expect(mail.parsed.html).toContain(`href="${APP}/tasks"`);

    // the push service said 410 for the stale device: it is forgotten
    await until(async () => (await h.call('GET', '/api/push/subscriptions', alice)).json.subscriptions.length === 1, 'stale subscription removed');
    const hist = await until(async () => {
      const e = (await h.call('GET', '/api/settings/notification-history', alice)).json.entries as { channel: string; status: string; title: string }[];
      return e.length >= 7 && e.every((x) => x.status === 'sent' || x.status === 'failed') ? e : null;
    }, 'history settled');
    expect(hist.filter((e) => e.status === 'sent').map((e) => e.channel).sort()).toEqual(['email', 'http-alert', 'ntfy', 'push', 'pushover', 'telegram']);
    expect(hist.filter((e) => e.status === 'failed').map((e) => e.channel)).toEqual(['push']);
  });

  it('retries a transient failure and records the attempts', async () => {
    await h.call('PUT', '/api/settings/notification-channels/http-alert', bob, { config: { url: `${rxUrl}/alert-bob` } });
    let n = 0;
    responder = (hit) => (hit.path === '/alert-bob' && ++n === 1 ? { status: 503 } : null);
    await notify({ userId: bob, title: 'Due today', body: '3 tasks', url: '/today', tag: 'due-today', dedupeKey: `due:${bob}:1` });
    const entry = await until(async () => {
      const e = (await h.call('GET', '/api/settings/notification-history', bob)).json.entries as { status: string; attempts: number }[];
      return e[0]?.status === 'sent' ? e[0] : null;
    }, 'bob alert sent after a retry');
    responder = () => null;
    expect(entry.attempts).toBe(2);
    expect(hitsAt('/alert-bob')).toHaveLength(2);
    expect(hitsAt('/alert-bob')[1]!.headers['x-service-signature']).toBeUndefined();
  });

  it('each channel has a test endpoint that sends now and reports the outcome', async () => {
    for (const type of ['ntfy', 'pushover', 'telegram', 'email', 'http-alert', 'push']) {
      const res = await h.call('POST', `/api/settings/notification-channels/${type}/test`, alice);
      expect(res.status, type).toBe(200);
      expect(res.json, type).toMatchObject({ type, ok: true, delivered: 1, error: null });
    }
    expect(mails.at(-1)!.parsed.subject).toBe('Test notification');
    expect(JSON.parse(hitsAt('/alert').at(-1)!.raw.toString()).title).toBe('Test notification');
    // a permanent error from the peer is reported, not retried
    responder = (hit) => (hit.path.startsWith('/pushover') ? { status: 400, body: '{"status":0,"errors":["application token is invalid"]}\n\u001b[31mFAKE LOG LINE' } : null);
    const bad = await h.call('POST', '/api/settings/notification-channels/pushover/test', alice);
    responder = () => null;
    expect(bad.json).toMatchObject({ type: 'pushover', ok: false, delivered: 0 });
    expect(bad.json.error).toMatch(/HTTP 400; the receiver answered: “.*application token is invalid.*FAKE LOG LINE”/);
    // eslint-disable-next-line no-control-regex -- control characters are what it is about
    expect(bad.json.error).not.toMatch(/[\n\u001b]/);
    const hist = (await h.call('GET', '/api/settings/notification-history', alice)).json.entries as { channel: string; status: string; test: boolean }[];
    expect(hist[0]).toMatchObject({ channel: 'pushover', status: 'failed', test: true });    // a mail server's refusal is labelled as its words too (issue 55), in the test result and the history
    const mailTo = (address: string) => h.call('PUT', '/api/settings/notification-channels/email', alice, { config: { address } });
    // its confirmation mail is refused already: saved, and the save says why no link went out
    const unsent = await mailTo('nobody@example.test');
    expect(unsent.status).toBe(503);
    expect(unsent.json.message).toMatch(/^the channel is saved, but the confirmation mail to nobody@example\.test could not be sent \(SMTP 550; the receiver answered: “550 5\.1\.1 <nobody@example\.test>: mailbox unavailable .*FAKE LOG LINE”\)/);
    // a mailbox confirmed once and gone since: the seeding does what the link does
    await h.pool.query("UPDATE notifier.channels SET confirmed_address = config->>'address', confirm_nonce = NULL WHERE user_id = $1 AND type = 'email'", [alice]);
    const refused = await h.call('POST', '/api/settings/notification-channels/email/test', alice);
    // back to alice's own address: confirmed again by its link, for the tests after this one
    await mailTo('alice@example.test');
    expect((await h.open(confirmationPath('alice@example.test', APP))).status).toBe(200);
    expect(refused.json).toMatchObject({ type: 'email', ok: false, delivered: 0 });
    expect(refused.json.error).toMatch(/^email: SMTP 550; the receiver answered: “550 5\.1\.1 <nobody@example\.test>: mailbox unavailable .*FAKE LOG LINE”$/);
    // eslint-disable-next-line no-control-regex -- control characters are what it is about
    expect(refused.json.error).not.toMatch(/[\n\u001b]/);
    const mailHist = (await h.call('GET', '/api/settings/notification-history', alice)).json.entries as { channel: string; error: string | null }[];
    expect(mailHist[0]).toMatchObject({ channel: 'email', error: expect.stringMatching(/SMTP 550; the receiver answered: “550 5\.1\.1 <nobody@example\.test>: mailbox unavailable .*FAKE LOG LINE”$/) });

    expect(hist.length).toBeLessThanOrEqual(50);
    expect((await h.call('POST', '/api/settings/notification-channels/ntfy/test', bob)).status).toBe(404);
  });

  it('names the bad field and keeps users apart', async () => {
    const topic = await h.call('PUT', '/api/settings/notification-channels/ntfy', bob, { config: { topic: 'bad topic!' } });
    expect(topic.status).toBe(400);
    expect(topic.json.issues[0].path).toBe('body.config.topic');
    const priv = await h.call('PUT', '/api/settings/notification-channels/http-alert', bob, { config: { url: 'https://10.0.0.1/hook' } });
    expect(priv.status).toBe(400);
    expect(priv.json.issues[0]).toMatchObject({ path: 'body.config.url' });
    const meta = await h.call('PUT', '/api/settings/notification-channels/ntfy', bob, { config: { topic: 'x', server: 'http://169.254.169.254' } });
    expect(meta.json.issues[0].path).toBe('body.config.server');
    const po = await h.call('PUT', '/api/settings/notification-channels/pushover', bob, { config: { userKey: USER_KEY } });
    expect(po.status).toBe(400);
    expect(po.json.issues[0]).toEqual({ path: 'body.config.appToken', message: 'is required' });
    expect((await h.call('PUT', '/api/settings/notification-channels/telegram', bob, { config: { botToken: BOT, chatId: '1', colour: 'red' } })).status).toBe(400);
    const type = await h.call('PUT', '/api/settings/notification-channels/carrier-pigeon', bob, { config: {} });
    expect(type.status).toBe(400);
    expect(type.json.issues[0].path).toBe('params.type');
    const sub = await h.call('POST', '/api/push/subscribe', bob, { endpoint: 'https://push.example.test/x', keys: { p256dh: 'short', auth: 'x' } });
    expect(sub.json.issues.map((i: { path: string }) => i.path)).toEqual(['body.keys.p256dh', 'body.keys.auth']);
    // bob sees none of alice's settings and cannot remove her device
    const bobs = await h.call('GET', '/api/settings/notification-channels', bob);
    expect(bobs.json.channels.filter((c: { configured: boolean }) => c.configured).map((c: { type: string }) => c.type)).toEqual(['http-alert']);
    expect((await h.call('POST', '/api/push/unsubscribe', bob, { endpoint: alicePhone().subscription.endpoint })).json).toEqual({ removed: false });
    expect((await h.call('GET', '/api/settings/notification-history', bob)).json.entries.every((e: { title: string }) => e.title !== 'Streak at risk 🔥')).toBe(true);
    expect((await h.call('DELETE', '/api/settings/notification-channels/http-alert', bob)).status).toBe(204);
    expect((await h.call('DELETE', '/api/settings/notification-channels/http-alert', bob)).status).toBe(404);
  });

  it("a push subscription stays its owner's when another user registers the same endpoint", async () => {
    const phone = alicePhone().subscription;
    const keysOf = async (user: string) =>
      (await h.pool.query<{ p256dh: string }>('SELECT p256dh FROM notifier.push_subscriptions WHERE user_id = $1 AND endpoint = $2', [user, phone.endpoint])).rows.map((r) => r.p256dh);
    // bob knows alice's endpoint URL and registers it with keys of his own
    const intruder = fakeBrowser('/push/phone').subscription;
    expect((await h.call('POST', '/api/push/subscribe', bob, intruder)).status).toBe(201);
    // alice's row is untouched (her keys, her account); bob has a separate row of his own
    expect(await keysOf(alice)).toEqual([phone.keys.p256dh]);
    expect(await keysOf(bob)).toEqual([intruder.keys.p256dh]);
    expect((await h.call('GET', '/api/push/subscriptions', alice)).json.subscriptions).toHaveLength(1);
    // bob removing "his" device removes only his row
    expect((await h.call('POST', '/api/push/unsubscribe', bob, { endpoint: phone.endpoint })).json).toEqual({ removed: true });
    expect(await keysOf(alice)).toEqual([phone.keys.p256dh]);
  });

  it('push keys must be a real P-256 point and a 16-byte auth secret, not just the right alphabet (#56.8)', async () => {
    const carol = randomUUID();
    const good = fakeBrowser('/push/carol-keys').subscription;
    // 65 bytes starting 0x04 and of the right length, but not a point on the curve; a 12-byte secret
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url');
    const bad = await h.call('POST', '/api/push/subscribe', carol, { ...good, keys: { p256dh: offCurve, auth: randomBytes(12).toString('base64url') } });
    expect(bad.status).toBe(400);
    expect(bad.json.issues.map((i: { path: string }) => i.path)).toEqual(['body.keys.p256dh', 'body.keys.auth']);
    expect((await h.call('GET', '/api/push/subscriptions', carol)).json.subscriptions).toEqual([]);
    expect((await h.call('POST', '/api/push/subscribe', carol, good)).status).toBe(201);
  });

  it('a user keeps at most 20 push devices: a new one replaces the oldest registration (#56.8)', async () => {
    const dave = randomUUID();
    const devices = Array.from({ length: 22 }, (_, i) => fakeBrowser(`/push/dave-${i}`).subscription);
    for (const d of devices) expect((await h.call('POST', '/api/push/subscribe', dave, d)).status).toBe(201);
    const { rows } = await h.pool.query<{ endpoint: string }>('SELECT endpoint FROM notifier.push_subscriptions WHERE user_id = $1 ORDER BY created_at', [dave]);
    expect(rows.map((r) => r.endpoint)).toEqual(devices.slice(2).map((d) => d.endpoint));
    // other users' devices are not counted against dave's cap
    expect((await h.call('GET', '/api/push/subscriptions', alice)).json.subscriptions).toHaveLength(1);
  });
});

describe('without SMTP, VAPID or SECRETS_KEYRING', () => {
  let h2: Harness;
  beforeAll(async () => {
    h2 = await startHarness({ OUTBOUND_ALLOW_LIST: '127.0.0.1', SECRETS_KEYRING: undefined });
  });
  afterAll(async () => h2?.stop());

  it('reports email and push unavailable and refuses them; secrets are sealed under a key derived from AUTH_SECRET', async () => {
    const u = randomUUID();
    const list = (await h2.call('GET', '/api/settings/notification-channels', u)).json.channels as { type: string; available: boolean }[];
    expect(list.filter((c) => !c.available).map((c) => c.type)).toEqual(['push', 'email']);
    const email = await h2.call('PUT', '/api/settings/notification-channels/email', u, { config: {} });
    expect(email.status).toBe(400);
    expect(email.json.message).toMatch(/not set up on this server/);
    expect(email.json.message).not.toMatch(/SMTP_HOST/);
    expect((await h2.call('GET', '/api/push/vapid-public-key', u)).json).toEqual({ publicKey: null });
    const secret = await h2.call('PUT', '/api/settings/notification-channels/http-alert', u, { config: { url: `${rxUrl}/x`, secret: 'alert-secret-1' } });
    expect(secret.status).toBe(200);
    expect(secret.json.config).toEqual({ url: `${rxUrl}/x`, hasSecret: true });
    const { rows } = await h2.pool.query<{ v: string }>("SELECT secrets_enc AS v FROM notifier.channels WHERE user_id = $1 AND type = 'http-alert'", [u]);
    expect(rows[0]!.v).toMatch(/^kr1:auth-secret:/);
    const plain = await h2.call('PUT', '/api/settings/notification-channels/http-alert', randomUUID(), { config: { url: `${rxUrl}/x` } });
    expect(plain.json.config).toEqual({ url: `${rxUrl}/x`, hasSecret: false });
  });

  it('a repeated dedupe key is not delivered again on any channel', async () => {
    // in-process bus: publish resolves after the notifier has handled the request, so counts are final
    const u = randomUUID();
    await h2.call('PUT', '/api/settings/notification-channels/http-alert', u, { config: { url: `${rxUrl}/dedupe-alert` } });
    await h2.call('PUT', '/api/settings/notification-channels/ntfy', u, { config: { server: `${rxUrl}/dedupe-ntfy`, topic: 'dd' } });
    const n: NotificationRequest = { userId: u, title: 'Weekly review', body: 'first', url: '/review', tag: 'weekly-review', dedupeKey: `weekly:${u}:2026-W47` };
    await h2.bus.publish(notificationRequested, n, randomUUID());
    expect(hitsAt('/dedupe-alert')).toHaveLength(1);
    expect(hitsAt('/dedupe-ntfy')).toHaveLength(1);
    await h2.bus.publish(notificationRequested, { ...n, body: 'second' }, randomUUID());
    await h2.bus.publish(notificationRequested, n, randomUUID());
    expect(hitsAt('/dedupe-alert')).toHaveLength(1);
    expect(hitsAt('/dedupe-ntfy')).toHaveLength(1);
    await h2.bus.publish(notificationRequested, { ...n, dedupeKey: `weekly:${u}:2026-W48` }, randomUUID());
    expect(hitsAt('/dedupe-alert')).toHaveLength(2);
    const rows = await h2.pool.query('SELECT channel, status FROM notifier.deliveries WHERE user_id = $1 ORDER BY channel, dedupe_key', [u]);
    expect(rows.rows).toEqual([
      { channel: 'http-alert', status: 'sent' },
      { channel: 'http-alert', status: 'sent' },
      { channel: 'ntfy', status: 'sent' },
      { channel: 'ntfy', status: 'sent' },
    ]);
  });
});

// issue 56 #2: the e-mail channel mailed any address without confirmation, and channel tests had no
// limit (30 mails to someone else in 6.3 s). The real gateway, with its per-user limits on, and the
// SMTP peer; the in-process bus, so a published notification has been handled when publish resolves.
describe('e-mail addresses are confirmed by a mailed link; channel tests are limited (#56.2)', () => {
  let h3: Harness;
  const APP3 = 'http://127.0.0.1:3000';
  beforeAll(async () => {
    h3 = await startHarness({
      OUTBOUND_ALLOW_LIST: '127.0.0.1',
      PUBLIC_APP_URL: APP3,
      RATE_LIMIT_WRITES: 'true',
      ...smtpEnv(),
    });
  }, 120_000);
  afterAll(async () => h3?.stop());

  const put = (u: string, type: string, config: unknown) => h3.call('PUT', `/api/settings/notification-channels/${type}`, u, { config });
  const test = (u: string, type: string) => h3.call('POST', `/api/settings/notification-channels/${type}/test`, u);
  /** a notification to `u`, handled in full when this resolves; the HTTP Alert hit proves it went out */
  const notifyNow = async (u: string, path: string) => {
    await h3.bus.publish(notificationRequested, { userId: u, title: `Due today ${randomUUID()}`, body: 'b', url: '/tasks', tag: 'due-today', dedupeKey: randomUUID() }, randomUUID());
    return hitsAt(path).length;
  };

  it('an unconfirmed address gets only the confirmation mail; the link confirms it once, and a forged or expired link does nothing', async () => {
    const carol = randomUUID();
    const victim = `victim-${carol}@example.test`;
    await put(carol, 'http-alert', { url: `${rxUrl}/carol-alert` });
    const saved = await put(carol, 'email', { address: victim });
    expect(saved.status).toBe(200);
    expect(saved.json).toMatchObject({ type: 'email', configured: true, confirmation: 'waiting' });
    expect(mailsTo(victim).map((m) => m.parsed.subject)).toEqual([CONFIRM_SUBJECT]);
    const confirmMail = mailsTo(victim)[0]!;
    expect(confirmMail.parsed.text).toContain(victim);
    expect(confirmMail.parsed.text).toMatch(/If not, ignore this mail/);

    // nothing else goes there: a test is refused, saying why, and a notification skips e-mail
    const refused = await test(carol, 'email');
    expect(refused.status).toBe(409);
    expect(refused.json.message).toMatch(new RegExp(`${victim} is waiting for confirmation`));
    expect(await notifyNow(carol, '/carol-alert')).toBe(1);
    expect(mailsTo(victim)).toHaveLength(1);
    const hist = (await h3.call('GET', '/api/settings/notification-history', carol)).json.entries as { channel: string }[];
    expect(hist.map((e) => e.channel)).toEqual(['http-alert']);
    expect((await h3.call('GET', '/api/settings/notification-channels', carol)).json.channels.find((c: { type: string }) => c.type === 'email').confirmation).toBe('waiting');

    // a forged link (another key) and an expired one (our key) change nothing
    const path = confirmationPath(victim, APP3);
    const token = path.split('/').pop()!;
    const forged = confirmLink(randomBytes(32), carol, new Date()).token;
    expect((await h3.open(`/api/notification-channels/email/confirm/${forged}`)).status).toBe(403);
    const key = confirmKeys(testConfig())[0]!;
    const expired = confirmLink(key, carol, new Date(Date.now() - CONFIRM_LIFETIME_MS - 5_000)).token;
    const gone = await h3.open(`/api/notification-channels/email/confirm/${expired}`);
    expect(gone.status).toBe(410);
    expect(gone.body).toMatch(/expired/);
    expect((await h3.open('/api/notification-channels/email/confirm/not-a-token')).status).toBe(400);
    expect((await h3.call('GET', '/api/settings/notification-channels/email', carol)).json.confirmation).toBe('waiting');

    // the link confirms and answers a plain page; it works once
    const opened = await h3.open(path);
    expect(opened.status).toBe(200);
    expect(opened.contentType).toMatch(/^text\/html/);
    expect(opened.body).toContain('Address confirmed');
    expect(opened.body).toContain(victim);
    expect(token.length).toBeLessThan(80);
    const again = await h3.open(path);
    expect(again.status).toBe(409);
    expect(again.body).toMatch(/used already/);
    expect((await h3.call('GET', '/api/settings/notification-channels/email', carol)).json.confirmation).toBe('confirmed');

    // confirmed: tests answer as before (200, sent now) and notifications are mailed
    expect((await test(carol, 'email')).json).toMatchObject({ type: 'email', ok: true, delivered: 1, error: null });
    expect(await notifyNow(carol, '/carol-alert')).toBe(2);
    expect(mailsTo(victim).map((m) => m.parsed.subject)).toEqual([CONFIRM_SUBJECT, 'Test notification', expect.stringMatching(/^Due today/)]);
  });

  it('a changed address waits for its own confirmation, and a link replaced by a newer one no longer works', async () => {
    const erin = randomUUID();
    const [first, second, third] = ['first', 'second', 'third'].map((w) => `${w}-${erin}@example.test`) as [string, string, string];
    await put(erin, 'http-alert', { url: `${rxUrl}/erin-alert` });
    await put(erin, 'email', { address: first });
    expect((await h3.open(confirmationPath(first, APP3))).status).toBe(200);

    // a new address: waiting again, and the confirmed one is not mailed either (it is no longer the channel's)
    expect((await put(erin, 'email', { address: second })).json.confirmation).toBe('waiting');
    expect(await notifyNow(erin, '/erin-alert')).toBe(1);
    expect(mailsTo(first).map((m) => m.parsed.subject)).toEqual([CONFIRM_SUBJECT]);
    expect(mailsTo(second).map((m) => m.parsed.subject)).toEqual([CONFIRM_SUBJECT]);
    expect((await test(erin, 'email')).status).toBe(409);

    // changed again before confirming: the second address's link is void, the third's confirms the third
    const stale = confirmationPath(second, APP3);
    await put(erin, 'email', { address: third });
    const replaced = await h3.open(stale);
    expect(replaced.status).toBe(409);
    expect(replaced.body).toMatch(/newer link was sent/);
    expect((await h3.call('GET', '/api/settings/notification-channels/email', erin)).json.confirmation).toBe('waiting');
    expect((await h3.open(confirmationPath(third, APP3))).status).toBe(200);
    expect((await test(erin, 'email')).json).toMatchObject({ ok: true, delivered: 1 });
    expect(mailsTo(third).map((m) => m.parsed.subject)).toEqual([CONFIRM_SUBJECT, 'Test notification']);
    expect(mailsTo(second)).toHaveLength(1);

    // back to the confirmed address: nothing to confirm, no mail
    const before = mails.length;
    expect((await put(erin, 'email', { address: third })).json.confirmation).toBe('confirmed');
    expect(mails.length).toBe(before);
  });

  it(`the ${CHANNEL_TESTS_PER_HOUR + 1}th test of a channel within the hour is 429 with Retry-After, and sends nothing`, async () => {
    const frank = randomUUID();
    const address = `frank-${frank}@example.test`;
    await put(frank, 'email', { address });
    expect((await h3.open(confirmationPath(address, APP3))).status).toBe(200);
    for (let i = 0; i < CHANNEL_TESTS_PER_HOUR; i++) expect((await test(frank, 'email')).status, `test ${i + 1}`).toBe(200);
    // the counts are the gateway's hourly windows; the next hour's is filled as well, so an hour turning meanwhile changes nothing
    await h3.pool.query(
      `INSERT INTO gateway.rate_limits (user_id, bucket, window_start, hits) VALUES ($1, 'hour:channel.test:email', date_trunc('hour', now()) + interval '1 hour', $2)
       ON CONFLICT (user_id, bucket, window_start) DO UPDATE SET hits = EXCLUDED.hits`,
      [frank, CHANNEL_TESTS_PER_HOUR],
    );
    const sent = mailsTo(address).length;
    const res = await h3.call('POST', '/api/settings/notification-channels/email/test', frank);
    expect(res.status).toBe(429);
    expect(res.json).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.json.message).toMatch(new RegExp(`at most ${CHANNEL_TESTS_PER_HOUR} tests of the email channel per hour; try again in \\d+ s`));
    expect(mailsTo(address)).toHaveLength(sent);
    const tests = await h3.pool.query("SELECT count(*)::int AS n FROM notifier.deliveries WHERE user_id = $1 AND channel = 'email' AND test", [frank]);
    expect(tests.rows[0].n).toBe(CHANNEL_TESTS_PER_HOUR);
    // each channel has its own budget
    await put(frank, 'http-alert', { url: `${rxUrl}/frank-alert` });
    expect((await test(frank, 'http-alert')).status).toBe(200);
  });
});
