/**
 * Start time and memory of the service images' processes, for one or more image tags in the same run
 * (e.g. images built from the TypeScript sources against images that run the bundles):
 *
 *   node_modules/.bin/node tools/k8s/image-footprint.ts [--starts 3] [--idle 10] TAG[=NODE_OPTIONS]…
 *
 * (e.g. `before bundle bundle=--enable-source-maps`: the third runs the bundle images with that NODE_OPTIONS)
 * Per tag, the six service containers run with podman (host network) against a PostgreSQL and a
 * nats-server of this run, one tag after the other. The first start migrates a fresh database;
 * then each container is restarted `--starts` times on the migrated database (a new replica's
 * case): start → ready is the container's StartedAt to its "<name> started" log line's time (the
 * service logs it once its bus handlers are subscribed; the gateway once it listens). After the
 * last start all six sit idle `--idle` seconds, then the node process's VmRSS, its Pss
 * (/proc/1/smaps_rollup) and its peak VmHWM are read. Prints a markdown table and the load average.
 * Needs root and the images (tools/k8s/build-images.sh, TASKSVC_IMAGE_TAG=<tag>).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createDatabase, createLogger, freePort, startLocalPostgres } from '@tasksvc/runtime';
import { startNats } from '../testenv/nats.ts';
import { median } from '../bench/lib/stats.ts';
import { podman } from './images.ts';

const SERVED = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'] as const;
const { values, positionals: tags } = parseArgs({
  options: { starts: { type: 'string', default: '3' }, idle: { type: 'string', default: '10' } },
  allowPositionals: true,
});
if (tags.length === 0) throw new Error('usage: image-footprint.ts [--starts N] [--idle S] TAG[=NODE_OPTIONS]…');
const starts = Number(values.starts);
const idleMs = Number(values.idle) * 1000;

const log = createLogger('image-footprint', 'warn');
const dir = mkdtempSync(join(tmpdir(), 'image-footprint-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });
const nats = await startNats();
const suffix = randomBytes(4).toString('hex');
const ctr = (variant: number, t: string) => `tasksvc-imgfoot-${variant}-${t}-${suffix}`;

/** ms from the container's start to its "<name> started" log line (pino's `time`) */
async function startToReady(name: string, t: string, since: number): Promise<number> {
  // polled every 0.5 s, not `until`'s 50 ms: each look is a podman process, which would take CPU from the start it times
  const end = Date.now() + 120_000;
  let time: number | undefined;
  while (time === undefined) {
    if (Date.now() > end) throw new Error(`gave up waiting for "${t} started" in ${name}'s log`);
    await new Promise((r) => setTimeout(r, 500));
    time = (await podman('logs', name))
      .split('\n')
      .filter((l) => l.includes(`"${t} started"`))
      .map((l) => (JSON.parse(l) as { time: number | string }).time)
      .map((x) => (typeof x === 'number' ? x : Date.parse(x)))
      .find((x) => x >= since);
  }
  const startedAt = Date.parse(await podman('inspect', '--format', '{{.State.StartedAt.Format "2006-01-02T15:04:05.000Z07:00"}}', name));
  return time - startedAt;
}

const kb = (text: string, key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) / 1024;
const rows: string[] = [];
const started: string[] = [];
try {
  for (const [variant, spec] of tags.entries()) {
    const [tag = '', nodeOptions] = spec.split(/=(.*)/s);
    const port = await freePort();
    const env = {
      DATABASE_URL: await createDatabase(pg.url, `imgfoot_${variant}_${suffix}`),
      NATS_URL: nats.url,
      NATS_ALLOW_ANONYMOUS: 'true',
      AUTH_SECRET: randomBytes(24).toString('hex'),
      AUTH_TRUST_HOST: 'true',
      PUBLIC_APP_URL: `http://127.0.0.1:${port}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      DISABLE_UPDATE_CHECK: 'true',
      LOG_LEVEL: 'info',
      ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
    };
    const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const ready = new Map<string, number[]>(SERVED.map((t) => [t, []]));
    const first = new Map<string, number>();
    for (const t of SERVED) {
      // one at a time: the first start migrates its schema, and its time is not a restart's
      const since = Date.now();
      await podman('run', '-d', '--name', ctr(variant, t), '--network', 'host', ...envArgs, `localhost/task-service-${t}:${tag}`);
      started.push(ctr(variant, t));
      first.set(t, await startToReady(ctr(variant, t), t, since - 1000));
    }
    for (let i = 0; i < starts; i++) {
      for (const t of SERVED) {
        await podman('stop', '-t', '10', ctr(variant, t));
        const since = Date.now();
        await podman('start', ctr(variant, t));
        ready.get(t)?.push(await startToReady(ctr(variant, t), t, since - 1000));
      }
    }
    await new Promise((r) => setTimeout(r, idleMs));
    const load = loadavg()[0]?.toFixed(1);
    for (const t of SERVED) {
      const status = await podman('exec', ctr(variant, t), 'cat', '/proc/1/status');
      const smaps = await podman('exec', ctr(variant, t), 'cat', '/proc/1/smaps_rollup');
      const r = ready.get(t) ?? [];
      rows.push(
        `| ${spec} | ${t} | ${(first.get(t)! / 1000).toFixed(2)} | ${(median(r) / 1000).toFixed(2)} (${r.map((x) => (x / 1000).toFixed(1)).join(', ')}) | ${kb(status, 'VmRSS').toFixed(0)} | ${kb(smaps, 'Pss').toFixed(0)} | ${kb(status, 'VmHWM').toFixed(0)} | ${load} |`,
      );
    }
    for (const t of SERVED) await podman('rm', '-f', '-t', '5', ctr(variant, t)).catch(() => undefined);
  }
} finally {
  for (const name of started) await podman('rm', '-f', '-t', '5', name).catch(() => undefined);
  await nats.stop();
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`| image tag | service | first start (migrates) s | start → ready s, median (each) | RSS idle MB | PSS idle MB | peak RSS MB | load |`);
console.log(`|---|---|---|---|---|---|---|---|`);
for (const r of rows) console.log(r);
