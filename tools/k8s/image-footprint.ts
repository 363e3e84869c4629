/**
 * Start time and memory of the service images' processes, for one or more image tags in the same run
 * (e.g. images built from the TypeScript sources against images that run the bundles):
 *
 *   node_modules/.bin/node tools/k8s/image-footprint.ts [--starts 3] [--idle 10] TAG[=NODE_OPTIONS]…
 *
 * (e.g. `before bundle bundle=--enable-source-maps`: the third runs the bundle images with that NODE_OPTIONS)
 * Every variant runs the six service containers with podman (host network), on its own database of
 * one PostgreSQL and its own nats-server; the variants run side by side and take turns start by start,
 * service by service, so a busy moment of a shared machine falls on all of them alike. The first start
 * migrates a fresh database; then each container is restarted `--starts` times on the migrated database
 * (a new replica's case): start → ready is the container's StartedAt to its "<name> started" log line's
 * time (the service logs it once its bus handlers are subscribed; the gateway once it listens), and the
 * CPU it took (utime + stime of the node process, read just after: less dependent on the machine's
 * load than the wall time). After the last start everything sits idle `--idle` seconds, then each node
 * process's VmRSS, its Pss (/proc/1/smaps_rollup: pages shared with the other containers' node, as
 * node's executable from the same base layer, counted once across them) and its peak VmHWM (since its
 * last start) are read. Prints a markdown table with the load average.
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
import { podman, serviceEnvArgs } from './images.ts';

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
/** CPU seconds (user + system) the container's node process has used: /proc/1/stat fields 14 and 15, in clock ticks of 10 ms */
async function cpuSeconds(name: string): Promise<number> {
  const fields = (await podman('exec', name, 'cat', '/proc/1/stat')).replace(/^.*\) /s, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Variant {
  spec: string;
  image: (t: string) => string;
  envArgs: string[];
  first: Map<string, number>;
  ready: Map<string, number[]>;
  cpu: Map<string, number[]>;
}
const variants: Variant[] = [];
const natsServers = [nats];
const started: string[] = [];
const rows: string[] = [];
try {
  for (const [i, spec] of tags.entries()) {
    const [tag = '', nodeOptions] = spec.split(/=(.*)/s);
    // each variant on its own database and nats-server: they run side by side and must not answer each other
    const ownNats = i === 0 ? nats : await startNats();
    if (i > 0) natsServers.push(ownNats);
    const port = await freePort();
    const envArgs = serviceEnvArgs({ databaseUrl: await createDatabase(pg.url, `imgfoot_${i}_${suffix}`), natsUrl: ownNats.url, port, extra: nodeOptions ? { NODE_OPTIONS: nodeOptions } : {} });
    variants.push({
      spec,
      image: (t) => `localhost/task-service-${t}:${tag}`,
      envArgs,
      first: new Map(),
      ready: new Map(SERVED.map((t) => [t, []])),
      cpu: new Map(SERVED.map((t) => [t, []])),
    });
  }
  // The variants run side by side and take turns, service by service, so a busy moment of the machine
  // falls on all of them alike. One start at a time; the first start migrates its schema (not a restart).
  for (const t of SERVED) {
    for (const [i, v] of variants.entries()) {
      const since = Date.now();
      await podman('run', '-d', '--name', ctr(i, t), '--network', 'host', ...v.envArgs, v.image(t));
      started.push(ctr(i, t));
      v.first.set(t, await startToReady(ctr(i, t), t, since - 1000));
    }
  }
  for (let n = 0; n < starts; n++) {
    for (const t of SERVED) {
      for (const [i, v] of variants.entries()) {
        await podman('stop', '-t', '10', ctr(i, t));
        const since = Date.now();
        await podman('start', ctr(i, t));
        v.ready.get(t)?.push(await startToReady(ctr(i, t), t, since - 1000));
        v.cpu.get(t)?.push(await cpuSeconds(ctr(i, t)));
      }
    }
  }
  await new Promise((r) => setTimeout(r, idleMs));
  const load = loadavg()[0]?.toFixed(1);
  for (const t of SERVED) {
    for (const [i, v] of variants.entries()) {
      const status = await podman('exec', ctr(i, t), 'cat', '/proc/1/status');
      const smaps = await podman('exec', ctr(i, t), 'cat', '/proc/1/smaps_rollup');
      const r = v.ready.get(t) ?? [];
      const c = v.cpu.get(t) ?? [];
      rows.push(
        `| ${v.spec} | ${t} | ${(v.first.get(t)! / 1000).toFixed(2)} | ${(median(r) / 1000).toFixed(2)} (${r.map((x) => (x / 1000).toFixed(1)).join(', ')}) | ${median(c).toFixed(2)} | ${kb(status, 'VmRSS').toFixed(0)} | ${kb(smaps, 'Pss').toFixed(0)} | ${kb(status, 'VmHWM').toFixed(0)} | ${load} |`,
      );
    }
  }
} finally {
  for (const name of started) await podman('rm', '-f', '-t', '5', name).catch(() => undefined);
  for (const n of natsServers) await n.stop();
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`| image tag | service | first start (migrates) s | start → ready s, median (each) | CPU s to ready, median | RSS idle MB | PSS idle MB | peak RSS MB | load |`);
console.log(`|---|---|---|---|---|---|---|---|---|`);
for (const r of rows) console.log(r);
