import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineRpc } from '@tasksvc/proto';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { quietLogger, startNats, testConfig, type LocalNats } from '../../../tools/testenv/index.ts';
import { createNatsBus } from './bus/nats.ts';
import { ConfigError, type Config } from './config.ts';
import { natsAuthOptions } from './nats-auth.ts';

/** Against real nats-server processes started with authentication (and one with TLS). */
const log = quietLogger();
const ping = defineRpc('test.natsauth.ping', z.object({ n: z.number() }), z.object({ n: z.number() }));
const servers: LocalNats[] = [];
afterAll(async () => {
  for (const s of servers) await s.stop();
});

async function server(args: string[] = []): Promise<LocalNats> {
  const s = await startNats({ args });
  servers.push(s);
  return s;
}

/** Connect as a service would (config → options), serve and call one request: proves the connection works. */
async function roundTrip(url: string, config: Config): Promise<number> {
  const bus = await createNatsBus({ servers: url, name: 'natsauth-test', log, ...natsAuthOptions(config) });
  try {
    bus.serve(ping, async ({ n }) => ({ n: n + 1 }));
    await bus.flush();
    return (await bus.request(ping, { n: 41 }, { timeoutMs: 5_000 })).n;
  } finally {
    await bus.close();
  }
}

const production = (overrides: Record<string, string>): Config => ({ ...testConfig(overrides), RUNTIME_ENV: 'production' });

describe('NATS authentication (#19.16)', () => {
  it('user and password: connects with them, is refused without', async () => {
    const s = await server(['--user', 'tasks', '--pass', 's3cret-pass']);
    expect(await roundTrip(s.url, production({ NATS_USER: 'tasks', NATS_PASSWORD: 's3cret-pass' }))).toBe(42);
    await expect(roundTrip(s.url, testConfig({}))).rejects.toThrow(/authorization/i);
    await expect(roundTrip(s.url, testConfig({ NATS_USER: 'tasks', NATS_PASSWORD: 'wrong' }))).rejects.toThrow(/authorization/i);
  });

  it('token', async () => {
    const s = await server(['--auth', 'a-long-bus-token']);
    expect(await roundTrip(s.url, production({ NATS_TOKEN: 'a-long-bus-token' }))).toBe(42);
  });

  it('production refuses a server without authentication unless NATS_ALLOW_ANONYMOUS=true; other modes accept it', async () => {
    const s = await server();
    await expect(roundTrip(s.url, production({}))).rejects.toThrow(/NATS_ALLOW_ANONYMOUS/);
    expect(await roundTrip(s.url, production({ NATS_ALLOW_ANONYMOUS: 'true' }))).toBe(42);
    expect(await roundTrip(s.url, testConfig({}))).toBe(42);
  });

  it('TLS with a private CA named by NATS_TLS_CA_FILE', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nats-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
    const s = await server(['--tls', '--tlscert', join(dir, 'cert.pem'), '--tlskey', join(dir, 'key.pem'), '--user', 'tasks', '--pass', 'over-tls']);
    const url = `tls://127.0.0.1:${s.port}`;
    expect(await roundTrip(url, production({ NATS_USER: 'tasks', NATS_PASSWORD: 'over-tls', NATS_TLS_CA_FILE: join(dir, 'cert.pem') }))).toBe(42);
  });

  it('names the bad variables: a user without a password, two methods at once, a missing creds file', () => {
    const problems = (env: Record<string, string>) => {
      try {
        testConfig(env);
      } catch (err) {
        return (err as ConfigError).problems.map((p) => p.variable);
      }
      return [];
    };
    expect(problems({ NATS_USER: 'tasks' })).toEqual(['NATS_PASSWORD']);
    expect(problems({ NATS_USER: 'tasks', NATS_PASSWORD: 'p', NATS_TOKEN: 't' })).toEqual(['NATS_TOKEN']);
    expect(problems({ NATS_CREDS_FILE: '/nonexistent/tasks.creds' })).toEqual(['NATS_CREDS_FILE']);
    const creds = join(mkdtempSync(join(tmpdir(), 'nats-creds-')), 'x.creds');
    writeFileSync(creds, 'not a creds file');
    expect(problems({ NATS_CREDS_FILE: creds })).toEqual([]);
  });
});
