import { z } from 'zod';

/**
 * The whole process configuration, parsed once from the environment. Names are exactly the spec's.
 * This is the only module that reads environment variables; everything else receives a Config.
 */

/** Unset and empty are the same: compose files and Secrets often carry empty values. */
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());

const bool = (fallback: boolean) =>
  z.preprocess(
    (v) => (v === undefined || v === '' ? String(fallback) : v),
    z.enum(['true', 'false'], { error: 'must be "true" or "false"' }).transform((v) => v === 'true'),
  );

const httpUrl = (fallback?: string) =>
  z.preprocess(
    (v) => (v === undefined || v === '' ? fallback : v),
    z
      .string({ error: 'is required' })
      .refine((v) => /^https?:\/\/[^/]/i.test(v) && URL.canParse(v), 'must be an absolute URL starting with http:// or https://')
      .transform((v) => v.replace(/\/+$/, '')),
  );

const optionalHttpUrl = z.preprocess(
  (v) => (v === '' ? undefined : v),
  z
    .string()
    .refine((v) => /^https?:\/\/[^/]/i.test(v) && URL.canParse(v), 'must be an absolute URL starting with http:// or https://')
    .optional(),
);

const postgresUrl = z
  .string({ error: 'is required (a PostgreSQL connection string, postgres://user:pass@host:5432/db)' })
  .refine((v) => /^postgres(ql)?:\/\//.test(v) && URL.canParse(v), 'must be a PostgreSQL URL (postgres://user:pass@host:port/database)');

const natsUrl = z
  .string()
  .refine(
    (v) => v.split(',').every((s) => /^(nats|tls|ws|wss):\/\/[^/]+/.test(s.trim()) && URL.canParse(s.trim())),
    'must be one or more comma-separated nats:// URLs',
  );

const uuidRe = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const port = (fallback: number) =>
  z.preprocess(
    (v) => (v === undefined || v === '' ? String(fallback) : v),
    z
      .string()
      .regex(/^\d+$/, 'must be an integer')
      .transform(Number)
      .refine((n) => n >= 1 && n <= 65535, 'must be between 1 and 65535'),
  );

const envSchema = z
  .object({
    // Required by the spec.
    DATABASE_URL: postgresUrl,
    AUTH_SECRET: z.string({ error: 'is required (at least 32 characters; e.g. `openssl rand -base64 32`)' }).min(32, 'must be at least 32 characters'),
    AUTH_TRUST_HOST: z.enum(['true', 'false'], { error: 'is required and must be "true" or "false"' }).transform((v) => v === 'true'),

    // Identity providers.
    CODEHOST_CLIENT_ID: optionalString,
    CODEHOST_CLIENT_SECRET: optionalString,
    CHAT_CLIENT_ID: optionalString,
    CHAT_CLIENT_SECRET: optionalString,
    SEARCH_CLIENT_ID: optionalString,
    SEARCH_CLIENT_SECRET: optionalString,
    CONSUMER_ACCOUNT_CLIENT_ID: optionalString,
    CONSUMER_ACCOUNT_CLIENT_SECRET: optionalString,
    OIDC_CLIENT_ID: optionalString,
    OIDC_CLIENT_SECRET: optionalString,
    OIDC_ISSUER: optionalHttpUrl,

    // Browser push.
    PUBLIC_VAPID_PUBLIC_KEY: optionalString,
    VAPID_PRIVATE_KEY: optionalString,
    VAPID_CONTACT: z.preprocess(
      (v) => (v === undefined || v === '' ? 'mailto:admin@example.invalid' : v),
      z.string().refine((v) => /^mailto:[^@\s]+@[^@\s]+$/.test(v) || /^https?:\/\/[^/]/.test(v), 'must be mailto:<email> or an http(s) URL'),
    ),

    // Email channel.
    SMTP_HOST: optionalString,
    SMTP_PORT: port(587),
    SMTP_USER: optionalString,
    SMTP_PASS: optionalString,
    SMTP_FROM: optionalString,
    SMTP_SECURE: bool(false),

    // Application.
    CRON_SECRET: optionalString,
    PUBLIC_APP_URL: httpUrl('http://localhost:3000'),
    AUTH_CALLBACK_URL: httpUrl('http://localhost:3000'),
    RUNTIME_ENV: z.preprocess(
      (v) => (v === undefined || v === '' ? 'development' : v),
      z.enum(['development', 'production', 'test'], { error: 'must be one of development, production, test' }),
    ),
    DISABLE_UPDATE_CHECK: bool(false),
    ADMIN_USER_IDS: z.preprocess(
      (v) => (v === undefined ? '' : v),
      z
        .string()
        .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
        .refine((ids) => ids.every((id) => uuidRe.test(id)), 'must be a comma-separated list of user UUIDs')
        .transform((ids) => ids.map((id) => id.toLowerCase())),
    ),
    POSTGRES_PASSWORD: optionalString,

    // Second factor.
    TOTP_ENCRYPTION_KEY: z.preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be exactly 64 hex characters (32 bytes; `openssl rand -hex 32`)').optional()),
    REQUIRE_2FA: bool(false),
    WEBAUTHN_RP_ID: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z
        .string()
        .regex(/^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)*$/i, 'must be a bare hostname: no scheme, port or path')
        .optional(),
    ),
    WEBAUTHN_RP_NAME: z.preprocess((v) => (v === undefined || v === '' ? 'Task Service' : v), z.string()),

    // Legal pages.
    PUBLIC_IMPRINT_NAME: optionalString,
    PUBLIC_IMPRINT_ADDRESS: optionalString,
    PUBLIC_IMPRINT_EMAIL: optionalString,
    PUBLIC_IMPRINT_PHONE: optionalString,

    // Build and release.
    SERVICE_COMMIT: optionalString,

    // Runtime of this implementation (not in the spec's tables).
    NATS_URL: z.preprocess((v) => (v === '' ? undefined : v), natsUrl.optional()),
    PORT: port(3000),
    HOST: z.preprocess((v) => (v === undefined || v === '' ? '0.0.0.0' : v), z.string()),
    LOG_LEVEL: z.preprocess(
      (v) => (v === undefined || v === '' ? 'info' : v),
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be one of fatal, error, warn, info, debug, trace, silent' }),
    ),
    UPDATE_CHECK_URL: httpUrl('https://registry.npmjs.org/task-service/latest'),
    /** Hosts (or CIDRs) outbound deliveries may reach although they resolve to private addresses. */
    OUTBOUND_ALLOW_LIST: z.preprocess(
      (v) => (v === undefined ? '' : v),
      z.string().transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean)),
    ),
    /** Notification channel API bases (docs/notifications.md); overridable for self-hosted relays and tests. */
    NTFY_DEFAULT_SERVER: httpUrl('https://ntfy.sh'),
    PUSHOVER_API_URL: httpUrl('https://api.pushover.net'),
    TELEGRAM_API_URL: httpUrl('https://api.telegram.org'),
    /** PEM file of extra CAs trusted for the SMTP server's certificate (private CAs, tests). */
    SMTP_TLS_CA_FILE: optionalString,
    /** Task-event webhook retry delays in seconds after attempt 1, 2, … (docs/webhooks.md). */
    WEBHOOK_RETRY_SCHEDULE: z.preprocess(
      (v) => (v === undefined || v === '' ? '5,300,1800,7200,18000,36000,36000' : v),
      z
        .string()
        .transform((v) => v.split(',').map((s) => Number(s.trim())))
        .refine((a) => a.length >= 1 && a.length <= 100 && a.every((n) => Number.isFinite(n) && n >= 0 && n <= 7 * 86_400), 'must be 1 to 100 comma-separated delays in seconds (0 to 604800)'),
    ),
    /** Per-attempt time limit of a webhook delivery; a crashed worker's deliveries are reclaimed after twice this plus 5 s. */
    WEBHOOK_TIMEOUT_SECONDS: z.preprocess(
      (v) => (v === undefined || v === '' ? '15' : v),
      z
        .string()
        .regex(/^\d+$/, 'must be a whole number of seconds')
        .transform(Number)
        .refine((n) => n >= 1 && n <= 60, 'must be between 1 and 60'),
    ),
    /** An endpoint failing without a success for this many hours is disabled and its owner notified. */
    WEBHOOK_DISABLE_AFTER_HOURS: z.preprocess(
      (v) => (v === undefined || v === '' ? '120' : v),
      z
        .string()
        .regex(/^\d+(\.\d+)?$/, 'must be a number of hours')
        .transform(Number)
        .refine((n) => n > 0, 'must be greater than 0'),
    ),
  })
  .superRefine((env, ctx) => {
    const need = (cond: boolean, path: string, message: string) => {
      if (cond) ctx.addIssue({ code: 'custom', path: [path], message });
    };
    // The spec's one configuration that refuses to start; incomplete pairs are warnings (configWarnings).
    need(env.REQUIRE_2FA && !env.TOTP_ENCRYPTION_KEY, 'TOTP_ENCRYPTION_KEY', 'is required when REQUIRE_2FA is true');
  })
  .transform((env) => ({
    ...env,
    WEBAUTHN_RP_ID: env.WEBAUTHN_RP_ID ?? new URL(env.PUBLIC_APP_URL).hostname,
    // Mail needs a sender; without SMTP_FROM use the app's name at its own host (and warn).
    SMTP_FROM: env.SMTP_FROM ?? (env.SMTP_HOST ? `${env.WEBAUTHN_RP_NAME} <noreply@${new URL(env.PUBLIC_APP_URL).hostname}>` : undefined),
    SMTP_FROM_DEFAULTED: Boolean(env.SMTP_HOST && !env.SMTP_FROM),
  }));

export type Config = z.infer<typeof envSchema>;

export class ConfigError extends Error {
  readonly problems: { variable: string; message: string }[];
  constructor(problems: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Parse the environment. Throws one ConfigError listing every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const r = envSchema.safeParse(env);
  if (r.success) return r.data;
  const problems = r.error.issues.map((i) => ({
    variable: String(i.path[0] ?? '(environment)'),
    message: i.code === 'invalid_type' && i.input === undefined ? 'is required' : i.message,
  }));
  throw new ConfigError(problems);
}

/**
 * Settings that are allowed but probably not what the operator meant: logged at start by every
 * process. (Only REQUIRE_2FA without TOTP_ENCRYPTION_KEY refuses to start, as the spec says.)
 */
export function configWarnings(config: Config): string[] {
  const out: string[] = [];
  for (const p of ['CODEHOST', 'CHAT', 'SEARCH', 'CONSUMER_ACCOUNT', 'OIDC'] as const) {
    const id = config[`${p}_CLIENT_ID`];
    const secret = config[`${p}_CLIENT_SECRET`];
    if (id && !secret) out.push(`${p}_CLIENT_SECRET is unset although ${p}_CLIENT_ID is set: sign-in with that provider will fail`);
    if (!id && secret) out.push(`${p}_CLIENT_ID is unset although ${p}_CLIENT_SECRET is set: that provider stays off`);
  }
  if (config.OIDC_ISSUER && !config.OIDC_CLIENT_ID) out.push('OIDC_ISSUER is set without OIDC_CLIENT_ID: the OIDC button shows, but sign-in will fail until the client is configured');
  if (config.OIDC_CLIENT_ID && !config.OIDC_ISSUER) out.push('OIDC_CLIENT_ID is set without OIDC_ISSUER: the generic OIDC provider stays off (OIDC_ISSUER activates it)');
  if (Boolean(config.PUBLIC_VAPID_PUBLIC_KEY) !== Boolean(config.VAPID_PRIVATE_KEY)) out.push('PUBLIC_VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY must be set together: browser push stays off');
  if (config.SMTP_FROM_DEFAULTED) out.push(`SMTP_FROM is unset: mail is sent as ${config.SMTP_FROM}`);
  if (config.SMTP_USER && !config.SMTP_PASS) out.push('SMTP_USER is set without SMTP_PASS: the mail server will probably refuse to authenticate');
  if (!config.CRON_SECRET) out.push('CRON_SECRET is unset: POST /api/cron accepts unauthenticated calls');
  if (config.RUNTIME_ENV === 'production' && !config.AUTH_CALLBACK_URL.startsWith('https://')) out.push('AUTH_CALLBACK_URL is not https:// in production: providers will refuse or browsers will drop cookies');
  return out;
}

/** The configured identity providers, in the spec's order, by their callback path segment. */
export function configuredProviders(config: Config): string[] {
  const out: string[] = [];
  if (config.CODEHOST_CLIENT_ID) out.push('codehost');
  if (config.CHAT_CLIENT_ID) out.push('chat');
  if (config.SEARCH_CLIENT_ID) out.push('search');
  if (config.CONSUMER_ACCOUNT_CLIENT_ID) out.push('consumer-account');
  if (config.OIDC_ISSUER) out.push('oidc');
  return out;
}

/** Read the raw environment once for the few things the launcher needs before parsing. */
export function rawEnv(): Record<string, string | undefined> {
  return { ...process.env };
}
