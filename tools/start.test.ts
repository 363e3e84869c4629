import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cronBucketStart } from '@tasksvc/proto';
import { freePort } from '@tasksvc/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { fileNats, testDatabase, until, waitForPort } from './testenv/index.ts';

const root = new URL('..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');
const children: ChildProcess[] = [];
const nats = fileNats();

/** Launch a project entry point with exactly this environment (plus PATH). */
function launch(script: string, env: Record<string, string>) {
  const child = spawn(node, [join(root, script)], { cwd: root, env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  children.push(child);
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? -1)));
  return { child, exited, output: () => output };
}

async function waitHealthy(port: number, timeoutMs = 90_000): Promise<{ ms: number; body: Record<string, unknown> }> {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/health`, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) return { ms: Date.now() - t0, body: (await res.json()) as Record<string, unknown> };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no healthy answer on ${port} within ${timeoutMs} ms`);
}

async function stop(p: ReturnType<typeof launch>) {
  p.child.kill('SIGTERM');
  return p.exited;
}

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

const secret = 'integration-secret-integration-secret-!!';

describe('npm start (tools/start.ts)', () => {
  it('comes up with no environment at all: embedded PostgreSQL, generated AUTH_SECRET, TOTP and VAPID keys kept in the data folder, each default logged', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'start-'));
    const port = await freePort();
    const first = launch('tools/start.ts', { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', AUTH_TRUST_HOST: 'true', LOG_LEVEL: 'info' });
    const { ms, body } = await waitHealthy(port);
    console.log(`[measured] cold start with a new embedded database answered /api/health after ${ms} ms`);
    expect(body.status).toBe('ok');
    // the log reaches stdout in chunks (runtime/logger.ts): wait for the last boot warning and the start line to arrive, not for a fixed time
    await until(() => ['DEVELOPMENT SIGN-IN IS ON', 'Task Service is up'].every((line) => first.output().includes(line)), 'the boot lines on stdout');
    expect(first.output()).toMatch(/DATABASE_URL is unset/);
    expect(first.output()).toMatch(/AUTH_SECRET is unset/);
    const generated = readFileSync(join(dataDir, 'auth-secret'), 'utf8');
    expect(generated.length).toBeGreaterThanOrEqual(32);
    // Every secret a feature needs, generated once, logged once.
    const totpKey = readFileSync(join(dataDir, 'totp-encryption-key'), 'utf8');
    expect(totpKey).toMatch(/^[0-9a-f]{64}$/);
    const vapid = JSON.parse(readFileSync(join(dataDir, 'vapid-keys.json'), 'utf8')) as { publicKey: string; privateKey: string };
    expect(Buffer.from(vapid.publicKey, 'base64url')).toHaveLength(65);
    expect(Buffer.from(vapid.privateKey, 'base64url')).toHaveLength(32);
    for (const v of ['TOTP_ENCRYPTION_KEY is unset', 'PUBLIC_VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are unset']) expect(first.output().split(v)).toHaveLength(2);
    expect(await (await fetch(`http://127.0.0.1:${port}/api/push/vapid-public-key`)).json()).toEqual({ publicKey: vapid.publicKey });
    // The embedded cron ran the dispatcher without anyone calling /api/cron.
    const lastRunAt = await until(async () => ((await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()) as { cron: { lastRunAt: string | null } }).cron.lastRunAt, 'the embedded cron run');
    // An external /api/cron call as well never runs that bucket a second time (the claims).
    const embeddedBucket = cronBucketStart(new Date(lastRunAt)).toISOString();
    const external = (await (await fetch(`http://127.0.0.1:${port}/api/cron`, { method: 'POST' })).json()) as { jobs: { bucket: string; status: string }[] };
    expect(external.jobs.filter((j) => j.bucket === embeddedBucket && j.status === 'ran')).toEqual([]);
    // The development sign-in is on and listed; the start line says where to open and how to sign in (with the real port).
    const providers = (await (await fetch(`http://127.0.0.1:${port}/api/auth/providers`)).json()) as Record<string, { callbackUrl: string }>;
    expect(Object.keys(providers)).toEqual(['dev']);
    // Sign-in runs on the loopback name the browser is at (issue 55, bug 6): asked at 127.0.0.1, answered for it.
    expect(providers.dev!.callbackUrl).toBe(`http://127.0.0.1:${port}/api/auth/callback/dev`);
    expect(first.output()).toMatch(/DEVELOPMENT SIGN-IN IS ON/);
    const lines = first.output().trim().split('\n');
    const up = lines.findIndex((l) => l.includes('Task Service is up'));
    expect(lines[up]).toContain(`open http://localhost:${port} and sign in with \\"Development sign-in\\"`);
    // Not a terminal: JSON lines only, and no line per health probe.
    for (const l of lines.filter((l) => l.startsWith('{'))) expect(() => JSON.parse(l)).not.toThrow();
    expect(first.output()).not.toMatch(/incoming request|"url":"\/api\/health"/);
    expect(await stop(first)).toBe(0);

    // Second start: same data folder, same secret, database kept.
    const second = launch('tools/start.ts', { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', AUTH_TRUST_HOST: 'true' });
    const warm = await waitHealthy(port);
    console.log(`[measured] warm start with the existing data folder answered /api/health after ${warm.ms} ms`);
    expect(readFileSync(join(dataDir, 'auth-secret'), 'utf8')).toBe(generated);
    expect(readFileSync(join(dataDir, 'totp-encryption-key'), 'utf8')).toBe(totpKey);
    expect(second.output()).not.toMatch(/initialised a new PostgreSQL data directory/);
    expect(await stop(second)).toBe(0);
  });

  it('in production demands every required variable, listing them all in one message', async () => {
    const p = launch('tools/start.ts', { RUNTIME_ENV: 'production' });
    expect(await p.exited).toBe(1);
    for (const v of ['DATABASE_URL', 'AUTH_SECRET', 'AUTH_TRUST_HOST']) expect(p.output()).toContain(`- ${v}:`);
  });

  it('refuses the development sign-in in production, naming DEV_SIGNIN', async () => {
    const p = launch('tools/start.ts', { RUNTIME_ENV: 'production', DATABASE_URL: 'postgres://x@127.0.0.1:1/x', AUTH_SECRET: secret, AUTH_TRUST_HOST: 'true', DEV_SIGNIN: 'true' });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/- DEV_SIGNIN: must not be "true" with RUNTIME_ENV=production/);
  });

  it('refuses to start with REQUIRE_2FA=true and no TOTP_ENCRYPTION_KEY', async () => {
    const p = launch('tools/start.ts', { RUNTIME_ENV: 'production', DATABASE_URL: 'postgres://x@127.0.0.1:1/x', AUTH_SECRET: secret, AUTH_TRUST_HOST: 'true', REQUIRE_2FA: 'true' });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/TOTP_ENCRYPTION_KEY: is required when REQUIRE_2FA is true/);
  });

  it('two processes starting at once against one fresh database both come up; each migration ran once, before the port opened', async () => {
    const DATABASE_URL = await testDatabase();
    const ports = [await freePort(), await freePort()];
    const procs = ports.map((port) => launch('tools/start.ts', { DATABASE_URL, AUTH_SECRET: secret, AUTH_TRUST_HOST: 'true', PORT: String(port), HOST: '127.0.0.1' }));

    // The moment the first port accepts a connection, every schema must already be migrated.
    const firstOpen = await Promise.any(ports.map((port) => waitForPort(port)));
    const db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    const migratedAtOpen = await db.query(`SELECT table_schema FROM information_schema.tables WHERE table_name = 'schema_migrations' ORDER BY 1`);
    expect(migratedAtOpen.rows.map((r) => r.table_schema)).toEqual(['auth', 'gateway', 'notifier', 'scheduler', 'tasks', 'webhook']);
    expect(firstOpen).toBeGreaterThan(0);

    await Promise.all(ports.map((port) => waitHealthy(port)));
    for (const schema of ['auth', 'gateway', 'notifier', 'scheduler', 'tasks', 'webhook']) {
      const { rows } = await db.query(`SELECT name, count(*)::int AS n FROM "${schema}".schema_migrations GROUP BY name`);
      expect(rows.length).toBeGreaterThan(0);
      for (const r of rows) expect(r.n).toBe(1);
    }
    await db.end();
    await Promise.all(procs.map(stop));
  });

  it('runs distributed: each service its own process over NATS, the gateway reporting who is up', async () => {
    const DATABASE_URL = await testDatabase();
    const port = await freePort();
    const env = { DATABASE_URL, AUTH_SECRET: secret, AUTH_TRUST_HOST: 'true', NATS_URL: nats.url(), PORT: String(port), HOST: '127.0.0.1' };
    const scheduler = launch('services/scheduler/src/main.ts', env);
    const gateway = launch('services/gateway/src/main.ts', env);
    const { body } = await waitHealthy(port);
    expect(body.status).toBe('ok');
    let services: Record<string, { up: boolean }> = {};
    for (let i = 0; i < 100 && !services.scheduler?.up; i++) {
      services = (await (await fetch(`http://127.0.0.1:${port}/api/health/services`)).json()) as typeof services;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(services.scheduler?.up).toBe(true);
    expect(services.gateway?.up).toBe(true);
    // cron status crosses NATS from the scheduler process
    expect(((await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()) as { cron: unknown }).cron).toEqual({ lastRunAt: null, minutesSinceLastRun: null });
    expect(await stop(scheduler)).toBe(0);
    expect(await stop(gateway)).toBe(0);
  });

  it('a standalone service refuses to start without NATS_URL', async () => {
    const p = launch('services/tasks/src/main.ts', { DATABASE_URL: 'postgres://x@127.0.0.1:1/x', AUTH_SECRET: secret, AUTH_TRUST_HOST: 'true' });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/NATS_URL: is required/);
  });
});
