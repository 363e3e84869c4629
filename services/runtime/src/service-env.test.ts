import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAUNCHER_ENV, SERVICE_ENV, SERVICE_NAMES, SHARED_ENV, serviceEnv } from '@tasksvc/proto';
import { describe, expect, it } from 'vitest';
import { ConfigError, configWarnings, ENV_VARIABLES, loadConfig, scopedConfig, UndeclaredVariableError } from './config.ts';
import { secretBox } from './keyring.ts';

// Per-service configuration (issue 54): proto/src/service-env.ts declares what each service reads.

const SERVICES_DIR = fileURLToPath(new URL('../..', import.meta.url));
const ring = `k1:${'a'.repeat(64)}`;
const all = {
  DATABASE_URL: 'postgres://app:pw@db:5432/tasks',
  AUTH_SECRET: 'x'.repeat(32),
  AUTH_TRUST_HOST: 'true',
  TOTP_ENCRYPTION_KEY: 'b'.repeat(64),
  SECRETS_KEYRING: ring,
  CRON_SECRET: 'cron-secret',
  SMTP_HOST: 'mail.example.invalid',
  SMTP_PASS: 'smtp-password',
};

function refusal(env: Record<string, string>, service?: (typeof SERVICE_NAMES)[number]): Record<string, string> {
  try {
    loadConfig(env, service);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return Object.fromEntries((err as ConfigError).problems.map((p) => [p.variable, p.message]));
  }
  return {};
}

/** Non-test TypeScript below a folder. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
}

describe('per-service configuration', () => {
  it('every declared name is a variable the configuration knows, and every variable is read by some service or launcher', () => {
    const declared = new Set<string>([...SHARED_ENV, ...Object.values(SERVICE_ENV).flat(), ...LAUNCHER_ENV]);
    expect([...declared].filter((v) => !ENV_VARIABLES.has(v))).toEqual([]);
    expect([...ENV_VARIABLES].filter((v) => !declared.has(v))).toEqual([]);
  });

  it("each service's code reads only the variables it declares (scan of services/<name>/src)", () => {
    for (const svc of SERVICE_NAMES) {
      const allowed = serviceEnv(svc);
      const undeclared = new Set<string>();
      for (const file of sources(join(SERVICES_DIR, svc, 'src'))) {
        // config.X, deps.config.X, ctx.config?.X, env.X: the ways service code reaches a variable
        for (const m of readFileSync(file, 'utf8').matchAll(/\b(?:config|env)\??\.([A-Z][A-Z0-9_]+)\b/g)) {
          if (ENV_VARIABLES.has(m[1]!) && !allowed.has(m[1]!)) undeclared.add(`${m[1]} in ${file.slice(SERVICES_DIR.length)}`);
        }
      }
      expect([...undeclared], svc).toEqual([]);
    }
  });

  it("a service's view throws on a variable it does not declare and hides it from `in` and spreads", () => {
    const gateway = scopedConfig(loadConfig(all), 'gateway');
    expect(gateway.CRON_SECRET).toBe('cron-secret');
    expect(() => gateway.TOTP_ENCRYPTION_KEY).toThrow(UndeclaredVariableError);
    expect(() => gateway.TOTP_ENCRYPTION_KEY).toThrow(/gateway service reads TOTP_ENCRYPTION_KEY/);
    expect(() => gateway.AUTH_SECRET).toThrow(UndeclaredVariableError);
    expect('SECRETS_KEYRING' in gateway).toBe(false);
    expect(Object.keys({ ...gateway })).not.toContain('SMTP_PASS');
    const auth = scopedConfig(loadConfig(all), 'auth');
    expect(auth.TOTP_ENCRYPTION_KEY).toBe('b'.repeat(64));
    expect(() => auth.SECRETS_KEYRING).toThrow(UndeclaredVariableError);
    expect(() => auth.CRON_SECRET).toThrow(UndeclaredVariableError);
  });

  it('a service run alone parses only its own variables: it refuses none of the others\' and receives none of their secrets', () => {
    // REQUIRE_2FA without TOTP_ENCRYPTION_KEY refuses the auth service, which reads both, and no other
    const no2faKey = { ...all, REQUIRE_2FA: 'true', TOTP_ENCRYPTION_KEY: '' };
    expect(refusal(no2faKey)).toHaveProperty('TOTP_ENCRYPTION_KEY');
    expect(refusal(no2faKey, 'auth')).toHaveProperty('TOTP_ENCRYPTION_KEY');
    for (const svc of ['gateway', 'tasks', 'notifier', 'webhook', 'scheduler'] as const) expect(refusal(no2faKey, svc), svc).toEqual({});
    // another service's bad value stops only that service
    expect(refusal({ ...all, WEBHOOK_TIMEOUT_SECONDS: '999' }, 'gateway')).toEqual({});
    expect(refusal({ ...all, WEBHOOK_TIMEOUT_SECONDS: '999' }, 'webhook')).toHaveProperty('WEBHOOK_TIMEOUT_SECONDS');
    // the spec's required AUTH_SECRET is required of the services that read it only
    const { AUTH_SECRET: _a, AUTH_TRUST_HOST: _t, ...withoutAuth } = all;
    for (const svc of ['notifier', 'webhook', 'scheduler'] as const) expect(refusal(withoutAuth, svc), svc).toEqual({});
    expect(refusal(withoutAuth, 'tasks')).toHaveProperty('AUTH_SECRET');
    expect(refusal(withoutAuth, 'auth')).toMatchObject({ AUTH_SECRET: 'is required' });
    expect(refusal(withoutAuth, 'gateway')).toHaveProperty('AUTH_TRUST_HOST');
    // a ring service needs a key to seal with: the ring, or AUTH_SECRET to derive one
    expect(refusal({ ...withoutAuth, SECRETS_KEYRING: '' }, 'webhook')).toHaveProperty('SECRETS_KEYRING');
    expect(refusal({ ...all, SECRETS_KEYRING: '' }, 'webhook')).toEqual({});
  });

  it('the webhook service alone seals under SECRETS_KEYRING without AUTH_SECRET (the operator gives it no AUTH_SECRET)', () => {
    const { AUTH_SECRET: _a, AUTH_TRUST_HOST: _t, ...env } = all;
    const webhook = loadConfig(env, 'webhook');
    const box = secretBox(webhook, 'webhook', 'signing');
    expect(box.currentKeyId).toBe('k1');
    expect(box.open(box.seal('s3cret'))).toBe('s3cret');
    expect(() => webhook.CRON_SECRET).toThrow(UndeclaredVariableError);
  });

  it('warnings at a service\'s start name only its own variables', () => {
    const env = { ...all, CRON_SECRET: '', SMTP_USER: 'u', SMTP_PASS: '' };
    expect(configWarnings(loadConfig(env))).toEqual(expect.arrayContaining([expect.stringMatching(/^CRON_SECRET/), expect.stringMatching(/^SMTP_USER/)]));
    expect(configWarnings(loadConfig(env, 'webhook'))).toEqual([]);
    expect(configWarnings(loadConfig(env, 'gateway'))).toEqual([expect.stringMatching(/^CRON_SECRET/)]);
    expect(configWarnings(loadConfig(env, 'notifier'))).toEqual(expect.arrayContaining([expect.stringMatching(/^SMTP_USER/)]));
  });
});
