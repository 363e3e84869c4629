/**
 * The images build-images.sh built, run for real with podman (host network) against the run's own
 * PostgreSQL and nats-server: every image runs as uid 1001 on the pinned Node.js, the gateway's
 * HEALTHCHECK passes under `podman healthcheck run`, and a task is created through the gateway
 * container, which reaches the auth and tasks containers over NATS, and comes back in the .ics export
 * (a lazily imported chunk of the tasks service's bundle).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, freePort, type Pool } from '@tasksvc/runtime';
import { fileNats, testDatabase, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { imageName, imagesMissing, podman, serviceEnvArgs, skipOrFail, TARGETS } from './images.ts';

const SERVED = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'] as const;
const suffix = randomBytes(4).toString('hex');
const ctr = (t: string) => `tasksvc-imgtest-${t}-${suffix}`;
const skip = skipOrFail(await imagesMissing());
const NODE_VERSION = (await import('../../package.json', { with: { type: 'json' } })).default.devDependencies.node;

describe.skipIf(skip)('built images', () => {
  const nats = fileNats();
  let port = 0;
  let databaseUrl = '';
  let pool: Pool | undefined;
  const started: string[] = [];

  const logs = (t: string) => podman('logs', ctr(t)).catch((e: Error) => e.message);

  beforeAll(async () => {
    databaseUrl = await testDatabase('img');
    port = await freePort();
    const envArgs = serviceEnvArgs({ databaseUrl, natsUrl: nats.url(), port });
    for (const t of SERVED) {
      await podman('run', '-d', '--name', ctr(t), '--network', 'host', ...envArgs, imageName(t));
      started.push(ctr(t));
    }
    pool = createPool(databaseUrl, createLogger('imgtest', 'silent'));
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
    for (const name of started) await podman('rm', '-f', '-t', '5', name).catch(() => undefined);
  }, 60_000);

  it.each(TARGETS)('%s: runs as uid 1001 on the pinned Node.js, its entry point is in the image', async (t) => {
    const cmd = JSON.parse(await podman('image', 'inspect', '--format', '{{json .Config.Cmd}}', imageName(t))) as string[];
    // the entry point is node's first argument that is not a flag (the CMD carries STANDALONE_NODE_FLAGS before it)
    const entry = cmd.slice(1).find((a) => !a.startsWith('-'));
    // the six services run their esbuild bundle (the Dockerfile's bundle stage), the others their source
    expect(entry, JSON.stringify(cmd)).toMatch((SERVED as readonly string[]).includes(t) ? /^bundle\/[a-z]+\/main\.mjs$/ : /\.ts$/);
    const out = await podman('run', '--rm', '--network', 'none', '--entrypoint', 'sh', imageName(t), '-c', `id -u; node --version; test -f "${entry}" && echo found`);
    expect(out.split('\n')).toEqual(['1001', `v${NODE_VERSION}`, 'found']);
  });

  it.each(SERVED)('%s: starts against the real PostgreSQL and NATS, its process runs as uid 1001', async (t) => {
    const name = t;
    await until(async () => (await logs(t)).includes(`${name} started`), `"${name} started" in the ${t} container's log`, 90_000).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await logs(t)}`);
    });
    const status = await podman('exec', ctr(t), 'cat', '/proc/1/status');
    expect(status).toMatch(/^Uid:\s+1001\s+1001\s+1001\s+1001$/m);
  });

  it('gateway: `podman healthcheck run` passes and GET /api/health answers 200', async () => {
    await until(() => podman('healthcheck', 'run', ctr('gateway')).then(() => true, () => false), 'the gateway health check to pass', 90_000);
    const res = await fetch(`http://127.0.0.1:${port}/api/health`);
    expect(res.status).toBe(200);
  });

  it('a task is created through the gateway container and read back (gateway → auth → tasks over NATS)', async () => {
    // auth migrates its schema before it logs "started"; the API key goes in through its storage code
    await until(async () => (await logs('auth')).includes('auth started'), 'auth started', 90_000);
    const { authorization } = await createUserWithApiKey(pool as Pool);
    const created = await fetch(`http://127.0.0.1:${port}/api/tasks`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'built by podman' }),
    });
    expect(created.status, await logs('gateway')).toBe(201);
    const { id } = ((await created.json()) as { task: { id: string } }).task;
    const read = await fetch(`http://127.0.0.1:${port}/api/tasks/${id}`, { headers: { authorization } });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { task: { title: string } }).task.title).toBe('built by podman');
    // the .ics export loads ical.js through a dynamic import: a lazy chunk of the tasks bundle
    const ics = await fetch(`http://127.0.0.1:${port}/api/user/export.ics`, { headers: { authorization } });
    const text = await ics.text();
    expect(ics.status, `${text}\n${await logs('tasks')}`).toBe(200);
    expect(text).toContain('BEGIN:VCALENDAR');
    expect(text).toContain('SUMMARY:built by podman');
  });
});
