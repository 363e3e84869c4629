import { describe, expect, it } from 'vitest';
import { ConfigError, configuredProviders, configWarnings, loadConfig } from './config.ts';

const base = {
  DATABASE_URL: 'postgres://app:pw@db:5432/tasks',
  AUTH_SECRET: 'x'.repeat(32),
  AUTH_TRUST_HOST: 'true',
};

function problems(env: Record<string, string | undefined>): Record<string, string> {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return Object.fromEntries((err as ConfigError).problems.map((p) => [p.variable, p.message]));
  }
  throw new Error('expected a configuration error');
}

describe('configuration', () => {
  it('applies the spec defaults', () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      SMTP_PORT: 587,
      SMTP_SECURE: false,
      PUBLIC_APP_URL: 'http://localhost:3000',
      AUTH_CALLBACK_URL: 'http://localhost:3000',
      RUNTIME_ENV: 'development',
      DISABLE_UPDATE_CHECK: false,
      ADMIN_USER_IDS: [],
      REQUIRE_2FA: false,
      WEBAUTHN_RP_ID: 'localhost',
      PORT: 3000,
      AUTH_TRUST_HOST: true,
    });
    expect(c.VAPID_CONTACT).toMatch(/^mailto:/);
    expect(c.WEBAUTHN_RP_NAME.length).toBeGreaterThan(0);
    expect(c.SERVICE_COMMIT).toBeUndefined();
  });

  it('reports every missing required variable at once', () => {
    const p = problems({});
    expect(Object.keys(p).sort()).toEqual(['AUTH_SECRET', 'AUTH_TRUST_HOST', 'DATABASE_URL']);
  });

  it.each([
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'not a url'],
    ['AUTH_SECRET', 'short'],
    ['AUTH_TRUST_HOST', 'yes'],
    ['AUTH_TRUST_HOST', '1'],
    ['SMTP_PORT', 'abc'],
    ['SMTP_PORT', '70000'],
    ['SMTP_PORT', '58.7'],
    ['SMTP_SECURE', 'TRUE!'],
    ['PUBLIC_APP_URL', 'example.com'],
    ['PUBLIC_APP_URL', 'ftp://example.com'],
    ['AUTH_CALLBACK_URL', '//example.com'],
    ['RUNTIME_ENV', 'staging'],
    ['DISABLE_UPDATE_CHECK', 'off'],
    ['ADMIN_USER_IDS', 'alice,bob'],
    ['TOTP_ENCRYPTION_KEY', 'abc'],
    ['TOTP_ENCRYPTION_KEY', 'g'.repeat(64)],
    ['TOTP_ENCRYPTION_KEY', 'a'.repeat(63)],
    ['REQUIRE_2FA', 'sometimes'],
    ['WEBAUTHN_RP_ID', 'https://example.com'],
    ['WEBAUTHN_RP_ID', 'example.com:3000'],
    ['WEBAUTHN_RP_ID', 'example.com/path'],
    ['VAPID_CONTACT', 'admin@example.com'],
    ['OIDC_ISSUER', 'issuer.example.com'],
    ['NATS_URL', 'http://localhost:4222'],
    ['LOG_LEVEL', 'loud'],
    ['PORT', '0'],
  ])('%s=%j is rejected, naming the variable', (name, value) => {
    const p = problems({ ...base, [name]: value });
    expect(p).toHaveProperty(name);
  });

  it('refuses REQUIRE_2FA=true without TOTP_ENCRYPTION_KEY (spec: start is refused)', () => {
    const p = problems({ ...base, REQUIRE_2FA: 'true' });
    expect(p.TOTP_ENCRYPTION_KEY).toMatch(/REQUIRE_2FA/);
    expect(loadConfig({ ...base, REQUIRE_2FA: 'true', TOTP_ENCRYPTION_KEY: 'a1'.repeat(32) }).REQUIRE_2FA).toBe(true);
  });

  it('starts with incomplete provider pairs but warns about each (only REQUIRE_2FA without a key refuses to start)', () => {
    expect(configWarnings(loadConfig({ ...base, CODEHOST_CLIENT_ID: 'id' })).join('\n')).toMatch(/CODEHOST_CLIENT_SECRET is unset/);
    expect(configWarnings(loadConfig({ ...base, CHAT_CLIENT_SECRET: 's' })).join('\n')).toMatch(/CHAT_CLIENT_ID is unset/);
    expect(configWarnings(loadConfig({ ...base, OIDC_CLIENT_ID: 'a', OIDC_CLIENT_SECRET: 'b' })).join('\n')).toMatch(/OIDC_ISSUER activates it/);
    const issuerOnly = loadConfig({ ...base, OIDC_ISSUER: 'https://id.example.com' });
    expect(configuredProviders(issuerOnly)).toEqual(['oidc']); // spec: setting OIDC_ISSUER activates the button
    expect(configWarnings(issuerOnly).join('\n')).toMatch(/without OIDC_CLIENT_ID/);
    expect(configWarnings(loadConfig({ ...base, CRON_SECRET: 'x', PUBLIC_VAPID_PUBLIC_KEY: 'pub' })).join('\n')).toMatch(/VAPID_PRIVATE_KEY must be set together/);
    expect(configWarnings(loadConfig({ ...base, CRON_SECRET: 'x' }))).toEqual([]);
  });

  it('passkey sign-up: off by default, warns when open to anyone, refuses a short invitation code', () => {
    expect(loadConfig(base).SIGNUP_WITH_PASSKEY).toBe(false);
    expect(configWarnings(loadConfig({ ...base, CRON_SECRET: 'x', SIGNUP_WITH_PASSKEY: 'true' })).join('\n')).toMatch(/without SIGNUP_INVITE_CODE/);
    expect(configWarnings(loadConfig({ ...base, CRON_SECRET: 'x', SIGNUP_WITH_PASSKEY: 'true', SIGNUP_INVITE_CODE: 'x'.repeat(12) }))).toEqual([]);
    expect(problems({ ...base, SIGNUP_INVITE_CODE: 'short' }).SIGNUP_INVITE_CODE).toMatch(/at least 12/);
    expect(problems({ ...base, SIGNUP_WITH_PASSKEY: 'yes' }).SIGNUP_WITH_PASSKEY).toMatch(/"true" or "false"/);
  });

  it('TRUST_PROXY_HOPS: 1 behind AUTH_TRUST_HOST, 0 otherwise, a small whole number when set', () => {
    expect(loadConfig({ ...base, AUTH_TRUST_HOST: 'true' }).TRUST_PROXY_HOPS).toBe(1);
    expect(loadConfig({ ...base, AUTH_TRUST_HOST: 'false' }).TRUST_PROXY_HOPS).toBe(0);
    expect(loadConfig({ ...base, AUTH_TRUST_HOST: 'true', TRUST_PROXY_HOPS: '0' }).TRUST_PROXY_HOPS).toBe(0);
    expect(problems({ ...base, TRUST_PROXY_HOPS: '-1' }).TRUST_PROXY_HOPS).toMatch(/whole number/);
    expect(problems({ ...base, TRUST_PROXY_HOPS: '11' }).TRUST_PROXY_HOPS).toMatch(/between 0 and 10/);
  });

  it('SHUTDOWN_DELAY_SECONDS: 0 by default, a whole number of seconds up to 60', () => {
    expect(loadConfig(base).SHUTDOWN_DELAY_SECONDS).toBe(0);
    expect(loadConfig({ ...base, SHUTDOWN_DELAY_SECONDS: '5' }).SHUTDOWN_DELAY_SECONDS).toBe(5);
    expect(problems({ ...base, SHUTDOWN_DELAY_SECONDS: '2.5' }).SHUTDOWN_DELAY_SECONDS).toMatch(/whole number/);
    expect(problems({ ...base, SHUTDOWN_DELAY_SECONDS: '61' }).SHUTDOWN_DELAY_SECONDS).toMatch(/between 0 and 60/);
  });

  it('METRICS_PORT: unset by default, a port, never the public PORT', () => {
    expect(loadConfig(base).METRICS_PORT).toBeUndefined();
    expect(loadConfig({ ...base, METRICS_PORT: '' }).METRICS_PORT).toBeUndefined();
    expect(loadConfig({ ...base, METRICS_PORT: '9464' }).METRICS_PORT).toBe(9464);
    expect(problems({ ...base, METRICS_PORT: 'metrics' })).toEqual({ METRICS_PORT: 'must be an integer' });
    expect(problems({ ...base, METRICS_PORT: '70000' })).toEqual({ METRICS_PORT: 'must be between 1 and 65535' });
    expect(problems({ ...base, PORT: '8080', METRICS_PORT: '8080' }).METRICS_PORT).toMatch(/must differ from PORT/);
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT: off by default, an http(s) base URL; OTEL_TRACES_SAMPLER_ARG a fraction', () => {
    expect(loadConfig(base).OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: '' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe('http://collector:4318');
    expect(problems({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }).OTEL_EXPORTER_OTLP_ENDPOINT).toMatch(/must be an absolute URL/);
    expect(loadConfig(base).OTEL_TRACES_SAMPLER_ARG).toBe(1);
    expect(loadConfig({ ...base, OTEL_TRACES_SAMPLER_ARG: '0.25' }).OTEL_TRACES_SAMPLER_ARG).toBe(0.25);
    expect(loadConfig({ ...base, OTEL_TRACES_SAMPLER_ARG: '0' }).OTEL_TRACES_SAMPLER_ARG).toBe(0);
    for (const bad of ['1.5', '-0.1', 'half']) expect(problems({ ...base, OTEL_TRACES_SAMPLER_ARG: bad }).OTEL_TRACES_SAMPLER_ARG, bad).toMatch(/from 0 to 1/);
  });

  it('lists configured providers; the OIDC button needs OIDC_ISSUER', () => {
    const c = loadConfig({
      ...base,
      CODEHOST_CLIENT_ID: 'a',
      CODEHOST_CLIENT_SECRET: 'b',
      CONSUMER_ACCOUNT_CLIENT_ID: 'c',
      CONSUMER_ACCOUNT_CLIENT_SECRET: 'd',
      OIDC_CLIENT_ID: 'e',
      OIDC_CLIENT_SECRET: 'f',
      OIDC_ISSUER: 'https://id.example.com',
    });
    expect(configuredProviders(c)).toEqual(['codehost', 'consumer-account', 'oidc']);
    expect(configuredProviders(loadConfig(base))).toEqual([]);
  });

  it('gives mail a sender when SMTP_FROM is unset (and warns), and parses the SMTP settings', () => {
    const fromless = loadConfig({ ...base, SMTP_HOST: 'mail.example.com', PUBLIC_APP_URL: 'https://tasks.example.com' });
    expect(fromless.SMTP_FROM).toBe('Task Service <noreply@tasks.example.com>');
    expect(configWarnings(fromless).join('\n')).toMatch(/SMTP_FROM is unset/);
    expect(loadConfig(base).SMTP_FROM).toBeUndefined();
    const c = loadConfig({ ...base, SMTP_HOST: 'mail.example.com', SMTP_FROM: 'Tasks <t@example.com>', SMTP_PORT: '465', SMTP_SECURE: 'true' });
    expect(c).toMatchObject({ SMTP_PORT: 465, SMTP_SECURE: true });
  });

  it('treats empty values as unset (compose and Secrets often carry them)', () => {
    const c = loadConfig({ ...base, SMTP_HOST: '', CRON_SECRET: '', ADMIN_USER_IDS: '', TOTP_ENCRYPTION_KEY: '' });
    expect(c.SMTP_HOST).toBeUndefined();
    expect(c.CRON_SECRET).toBeUndefined();
    expect(c.ADMIN_USER_IDS).toEqual([]);
  });

  it('parses ADMIN_USER_IDS, derives WEBAUTHN_RP_ID from PUBLIC_APP_URL, trims trailing slashes', () => {
    const id = '3F2504E0-4F89-11D3-9A0C-0305E82C3301';
    const c = loadConfig({ ...base, ADMIN_USER_IDS: ` ${id} , 6fa459ea-ee8a-3ca4-894e-db77e160355e `, PUBLIC_APP_URL: 'https://tasks.example.com/' });
    expect(c.ADMIN_USER_IDS).toEqual([id.toLowerCase(), '6fa459ea-ee8a-3ca4-894e-db77e160355e']);
    expect(c.WEBAUTHN_RP_ID).toBe('tasks.example.com');
    expect(c.PUBLIC_APP_URL).toBe('https://tasks.example.com');
  });

  it('prints one message listing every bad variable', () => {
    try {
      loadConfig({ AUTH_SECRET: 'short', AUTH_TRUST_HOST: 'maybe', SMTP_PORT: 'x' });
      expect.unreachable();
    } catch (err) {
      const msg = (err as Error).message;
      for (const v of ['DATABASE_URL', 'AUTH_SECRET', 'AUTH_TRUST_HOST', 'SMTP_PORT']) expect(msg).toContain(`- ${v}:`);
    }
  });

  describe('firstrun: development sign-in and port-following URLs', () => {
    it('refuses DEV_SIGNIN=true with RUNTIME_ENV=production, naming the variable', () => {
      const p = problems({ ...base, RUNTIME_ENV: 'production', DEV_SIGNIN: 'true' });
      expect(p.DEV_SIGNIN).toMatch(/must not be "true" with RUNTIME_ENV=production/);
      expect(problems({ ...base, DEV_SIGNIN: 'yes' }).DEV_SIGNIN).toMatch(/"true" or "false"/);
    });

    it('is on in development until a real provider is configured; DEV_SIGNIN keeps or stops it; never in production or test', () => {
      expect(loadConfig(base).DEV_SIGNIN).toBe(true);
      expect(loadConfig({ ...base, OIDC_ISSUER: 'https://id.example.test' }).DEV_SIGNIN).toBe(false);
      expect(loadConfig({ ...base, CODEHOST_CLIENT_ID: 'x', CODEHOST_CLIENT_SECRET: 'y' }).DEV_SIGNIN).toBe(false);
      expect(loadConfig({ ...base, OIDC_ISSUER: 'https://id.example.test', DEV_SIGNIN: 'true' }).DEV_SIGNIN).toBe(true);
      expect(loadConfig({ ...base, DEV_SIGNIN: 'false' }).DEV_SIGNIN).toBe(false);
      expect(loadConfig({ ...base, RUNTIME_ENV: 'production' }).DEV_SIGNIN).toBe(false);
      expect(loadConfig({ ...base, RUNTIME_ENV: 'test' }).DEV_SIGNIN).toBe(false);
      // Only `npm start` fills in the running provider; the environment cannot.
      expect(loadConfig({ ...base, devSignIn: 'x' }).devSignIn).toBeUndefined();
    });

    it('defaults PUBLIC_APP_URL and AUTH_CALLBACK_URL to the listened port in development, port 3000 otherwise', () => {
      expect(loadConfig({ ...base, PORT: '3102' })).toMatchObject({ PUBLIC_APP_URL: 'http://localhost:3102', AUTH_CALLBACK_URL: 'http://localhost:3102', WEBAUTHN_RP_ID: 'localhost' });
      expect(loadConfig({ ...base, PORT: '3102', RUNTIME_ENV: 'production' })).toMatchObject({ PUBLIC_APP_URL: 'http://localhost:3000', AUTH_CALLBACK_URL: 'http://localhost:3000' });
      expect(loadConfig({ ...base, PORT: '3102', PUBLIC_APP_URL: 'https://tasks.example.test/', AUTH_CALLBACK_URL: '' })).toMatchObject({ PUBLIC_APP_URL: 'https://tasks.example.test', AUTH_CALLBACK_URL: 'http://localhost:3102' });
    });
  });
});
