/**
 * The images build-images.sh leaves in its private podman storage, and how tests and scripts reach
 * them (the same CONTAINERS_CONF / CONTAINERS_STORAGE_CONF that podman-env.sh writes).
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const IMAGE_CACHE = process.env.TASKSVC_IMAGE_CACHE ?? '/var/cache/task-service/images';
export const IMAGE_TAG = process.env.TASKSVC_IMAGE_TAG ?? 'local';
export const TARGETS = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'firewall', 'operator'] as const;
export type Target = (typeof TARGETS)[number];
export const imageName = (t: string): string => `localhost/task-service-${t}:${IMAGE_TAG}`;
export const PAUSE_IMAGE = 'localhost/pause:3.2';
/** The operator-run NATS (spec.nats.image) built from Debian's nats-server (nats.Containerfile). */
export const NATS_IMAGE = 'localhost/nats:bookworm-local';
/** PostgreSQL for the CloudNativePG stand-in (postgres.Containerfile, cnpg-standin.ts). */
export const POSTGRES_IMAGE = 'localhost/postgres:15-bookworm-local';

const run = promisify(execFile);
export const podmanEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  CONTAINERS_CONF: join(IMAGE_CACHE, 'containers.conf'),
  CONTAINERS_STORAGE_CONF: join(IMAGE_CACHE, 'storage.conf'),
});

/** Runs podman against the project's storage; resolves with stdout, rejects with stderr in the message. */
export async function podman(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run('podman', args, { env: podmanEnv(), maxBuffer: 64 << 20 });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`podman ${args.join(' ')}: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

/**
 * Why image tests cannot run here, or '' when they can. In CI (CI=true) a missing image is the
 * build's failure and must not turn into a skip, so callers throw there.
 */
export async function imagesMissing(targets: readonly string[] = TARGETS): Promise<string> {
  if (process.getuid?.() !== 0) return 'needs root (podman storage in the image cache)';
  if (!existsSync(join(IMAGE_CACHE, 'containers.conf'))) return `no image cache in ${IMAGE_CACHE}: run tools/k8s/build-images.sh`;
  const missing: string[] = [];
  for (const t of targets) {
    await podman('image', 'exists', imageName(t)).catch(() => missing.push(imageName(t)));
  }
  return missing.length ? `images missing (${missing.join(', ')}): run tools/k8s/build-images.sh` : '';
}

/** Skip loudly outside CI, fail in CI. */
export function skipOrFail(reason: string): boolean {
  if (!reason) return false;
  if (process.env.CI === 'true') throw new Error(`CI requires the built images: ${reason}`);
  console.warn(`\n*** SKIPPING: ${reason} ***\n`);
  return true;
}

/**
 * The `podman run -e` arguments that start a service image on loopback: its database, a NATS server
 * without credentials, a fresh AUTH_SECRET, the gateway on `port`; `extra` added (e.g. NODE_OPTIONS).
 */
export function serviceEnvArgs(o: { databaseUrl: string; natsUrl: string; port: number; extra?: Record<string, string> }): string[] {
  const env: Record<string, string> = {
    DATABASE_URL: o.databaseUrl,
    NATS_URL: o.natsUrl,
    NATS_ALLOW_ANONYMOUS: 'true',
    AUTH_SECRET: randomBytes(24).toString('hex'),
    AUTH_TRUST_HOST: 'true',
    PUBLIC_APP_URL: `http://127.0.0.1:${o.port}`,
    PORT: String(o.port),
    HOST: '127.0.0.1',
    DISABLE_UPDATE_CHECK: 'true',
    LOG_LEVEL: 'info',
    ...o.extra,
  };
  return Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
}
