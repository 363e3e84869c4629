import { accessSync, constants } from 'node:fs';
import { z } from 'zod';
import { PROJECT_RELEASES_URL } from './version.ts';
import { serviceEnv, type ServiceName } from '@tasksvc/proto';
import { parseKeyRing, parseSubkeys, subkeysProblem } from './keyring.ts';

/**
 * The whole process configuration, parsed once from the environment. Names are exactly the spec's.
 * This is the only module that reads environment variables; everything else receives a Config.
 */

/** Unset and empty are the same: compose files and Secrets often carry empty values. */
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());

/** A path to a file this process can read (checked at start, so a typo stops it with a clear message). */
const readableFile = z.preprocess(
  (v) => (v === '' ? undefined : v),
  z
    .string()
    .refine((p) => {
      try {
        accessSync(p, constants.R_OK);
        return true;
      } catch {
        return false;
      }
    }, 'must name a readable file')
    .optional(),
);

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

/** libpq's Unix-socket form, which WHATWG URL cannot parse: `postgres://user:pass@/db?host=/run/postgresql` */
const UNIX_SOCKET_URL = /^postgres(ql)?:\/\/([^@/?#]*@)?\/[^?#]*\?([^#]*&)?host=\//;

const postgresUrl = z
  .string({ error: 'is required (a PostgreSQL connection string, postgres://user:pass@host:5432/db)' })
  .refine(
    (v) => /^postgres(ql)?:\/\//.test(v) && (URL.canParse(v) || UNIX_SOCKET_URL.test(v)),
    'must be a PostgreSQL URL (postgres://user:pass@host:port/database, or postgres://user:pass@/database?host=/socket/directory)',
  );

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

/** An optional variable read by a parser that returns its value or the problem as a string (the key rings). */
function parsedWith<T>(parse: (v: string) => T | string) {
  return z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .transform((v, ctx) => {
        const out = parse(v);
        if (typeof out === 'string') {
          ctx.addIssue({ code: 'custom', message: out });
          return z.NEVER;
        }
        return out;
      })
      .optional(),
  );
}

const fields = {
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
    // Without a value: http://localhost:<PORT> in development (transform below), else port 3000.
    PUBLIC_APP_URL: optionalHttpUrl,
    AUTH_CALLBACK_URL: optionalHttpUrl,
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
    /**
     * The key ring sealing the secrets services keep for users (webhook and notification channel
     * secrets; keyring.ts): `<id>:<64 hex>`, comma-separated, the first seals, all open. Never TOTP's key.
     */
    SECRETS_KEYRING: parsedWith(parseKeyRing),
    /**
     * A derived ring (keyring.ts): `<service>/<purpose>:<id>:<64 hex>`, comma-separated, the subkeys a
     * service would derive from SECRETS_KEYRING, so it holds only its own. SECRETS_KEYRING wins when both are set.
     */
    SECRETS_SUBKEYS: parsedWith(parseSubkeys),
    WEBAUTHN_RP_ID: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z
        .string()
        .regex(/^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)*$/i, 'must be a bare hostname: no scheme, port or path')
        .optional(),
    ),
    WEBAUTHN_RP_NAME: z.preprocess((v) => (v === undefined || v === '' ? 'Task Service' : v), z.string()),

    // auth area: passkey-only accounts (docs/auth.md "Passkey-only accounts").
    SIGNUP_WITH_PASSKEY: bool(false),
    SIGNUP_INVITE_CODE: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(12, 'must be at least 12 characters (it is the only thing between a stranger and a new account)').optional()),
    /**
     * Seconds the gateway keeps answering after SIGTERM (each response says `Connection: close`), and on
     * while new connections still arrive (gateway waitForQuiet), before it stops listening, so a load balancer or kube-proxy can stop sending it traffic first. The
     * operator sets 5 on Kubernetes; 0 (stop at once) elsewhere.
     */
    SHUTDOWN_DELAY_SECONDS: z.preprocess(
      (v) => (v === undefined || v === '' ? '0' : v),
      z.string().regex(/^\d+$/, 'must be a whole number of seconds (0 to 60)').transform(Number).refine((n) => n <= 60, 'must be between 0 and 60'),
    ),
    /** Reverse proxies in front of the gateway whose X-Forwarded-For entry is believed (default: 1 with AUTH_TRUST_HOST=true, else 0). */
    TRUST_PROXY_HOPS: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z
        .string()
        .regex(/^\d+$/, 'must be a whole number of proxies (0 to 10)')
        .transform(Number)
        .refine((n) => n <= 10, 'must be between 0 and 10')
        .optional(),
    ),

    // Legal pages.
    PUBLIC_IMPRINT_NAME: optionalString,
    PUBLIC_IMPRINT_ADDRESS: optionalString,
    PUBLIC_IMPRINT_EMAIL: optionalString,
    PUBLIC_IMPRINT_PHONE: optionalString,

    // Build and release.
    SERVICE_COMMIT: optionalString,

    // security: NATS authentication (docs/security.md). The bus trusts the identity in each message.
    NATS_USER: optionalString,
    NATS_PASSWORD: optionalString,
    NATS_TOKEN: optionalString,
    NATS_CREDS_FILE: readableFile,
    NATS_TLS_CA_FILE: readableFile,
    NATS_ALLOW_ANONYMOUS: bool(false),
    /** Servers that keep a copy of the events stream (JetStream num_replicas): 3 on a 3-server cluster, so it survives the loss of one */
    NATS_STREAM_REPLICAS: z.preprocess(
      (v) => (v === undefined || v === '' ? '1' : v),
      z.string().regex(/^[1-5]$/, 'must be 1 to 5 (servers of the NATS cluster that keep the events stream; JetStream allows at most 5)').transform(Number),
    ),
    /** security: per-user write rate limits (gateway/src/rate-limit.ts); off only for load tests and benchmarks */
    RATE_LIMIT_WRITES: bool(true),
    /** Prepare each parameterised statement once per connection (db/pool.ts); false behind a pooler that cannot keep them (PgBouncer < 1.21 in transaction mode) */
    DATABASE_PREPARED_STATEMENTS: bool(true),

    // Runtime of this implementation (not in the spec's tables).
    NATS_URL: z.preprocess((v) => (v === '' ? undefined : v), natsUrl.optional()),
    PORT: port(3000),
    /** Probe port of a service run alone (`GET /health`); unset: none. The gateway answers /api/health on PORT. */
    HEALTH_PORT: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z.string().regex(/^\d+$/, 'must be an integer').transform(Number).refine((n) => n >= 1 && n <= 65535, 'must be between 1 and 65535').optional(),
    ),
    /**
     * The gateway's Prometheus listener (`GET /metrics` only, docs/observability.md); unset: none. Never
     * the public PORT. In the single-process mode it serves every service's metrics (one process).
     */
    METRICS_PORT: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z.string().regex(/^\d+$/, 'must be an integer').transform(Number).refine((n) => n >= 1 && n <= 65535, 'must be between 1 and 65535').optional(),
    ),
    /**
     * OTLP/HTTP base URL of a trace collector (docs/observability.md#traces): spans go to `<url>/v1/traces`.
     * Unset: tracing is off and the OpenTelemetry SDK is never loaded.
     */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(
      (v) => (v === '' ? undefined : v),
      z
        .string()
        .refine((v) => /^https?:\/\/[^/]/i.test(v) && URL.canParse(v), 'must be an absolute URL starting with http:// or https:// (the collector\'s OTLP/HTTP base, e.g. http://otel-collector:4318)')
        .transform((v) => v.replace(/\/+$/, ''))
        .optional(),
    ),
    /** Fraction (0 to 1) of new traces recorded; a request that arrives with a traceparent keeps its caller's decision. */
    OTEL_TRACES_SAMPLER_ARG: z.preprocess(
      (v) => (v === undefined || v === '' ? '1' : v),
      z
        .string()
        .regex(/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/, 'must be a number from 0 to 1 (the fraction of traces recorded)')
        .transform(Number),
    ),
    HOST: z.preprocess((v) => (v === undefined || v === '' ? '0.0.0.0' : v), z.string()),
    LOG_LEVEL: z.preprocess(
      (v) => (v === undefined || v === '' ? 'info' : v),
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be one of fatal, error, warn, info, debug, trace, silent' }),
    ),
    /** Default: this project's own release listing (version.ts); without one the check is off (updateCheckOffReason). */
    UPDATE_CHECK_URL: optionalHttpUrl,
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

    // firstrun: the development sign-in of `npm start` (docs/auth.md#development-sign-in).
    /** unset: on in development while no real provider is configured; `true` keeps it on next to real providers; `false` never. */
    DEV_SIGNIN: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['true', 'false'], { error: 'must be "true" or "false"' }).optional()),
};

/** Every variable this implementation reads (proto/src/service-env.ts says which service reads which). */
export const ENV_VARIABLES: ReadonlySet<string> = new Set(Object.keys(fields));

/** The spec's required variables: required of a service only when it declares them. */
const REQUIRED = new Set(['DATABASE_URL', 'AUTH_SECRET', 'AUTH_TRUST_HOST']);
/** An undeclared variable: never in the filtered input, so always undefined. */
const absent = z.undefined().optional();

/**
 * `scope`: the variables one service declares (a service run on its own); the others are read as
 * unset, so one service never refuses to start over another's variable. Without it: every variable.
 */
function buildSchema(scope?: ReadonlySet<string>, service?: ServiceName) {
  const reads = (v: string) => !scope || scope.has(v);
  // The ring services read AUTH_SECRET only to derive a ring key when SECRETS_KEYRING is unset (keyring.ts).
  const ringFallback = (v: string) => Boolean(scope?.has('SECRETS_KEYRING')) && v === 'AUTH_SECRET';
  const field = (k: string, s: z.ZodType) => (!reads(k) ? (REQUIRED.has(k) ? absent : s) : ringFallback(k) ? s.optional() : s);
  const shape = scope ? Object.fromEntries(Object.entries(fields).map(([k, s]) => [k, field(k, s)])) : fields;
  return z
  .object(shape as typeof fields)
  .superRefine((env, ctx) => {
    const need = (cond: boolean, path: string, message: string) => {
      if (cond && reads(path)) ctx.addIssue({ code: 'custom', path: [path], message });
    };
    // The spec's one configuration that refuses to start; incomplete pairs are warnings (configWarnings).
    need(env.REQUIRE_2FA && !env.TOTP_ENCRYPTION_KEY, 'TOTP_ENCRYPTION_KEY', 'is required when REQUIRE_2FA is true');
    // a ring service run on its own needs a key to seal with: the ring, or AUTH_SECRET to derive one
    if (ringFallback('AUTH_SECRET')) need(!env.SECRETS_KEYRING && !env.SECRETS_SUBKEYS && !env.AUTH_SECRET, 'SECRETS_KEYRING', 'is required (or its derived ring SECRETS_SUBKEYS, or AUTH_SECRET, from which a key is derived): it seals the secrets this service keeps');
    // a derived ring holds exactly this service's purposes (never another's), each under the same key ids
    if (service && env.SECRETS_SUBKEYS) {
      const problem = subkeysProblem(env.SECRETS_SUBKEYS, service);
      if (problem) need(true, 'SECRETS_SUBKEYS', problem);
    }
    // The development sign-in lets anyone sign in as anyone: never in production.
    need(env.RUNTIME_ENV === 'production' && env.DEV_SIGNIN === 'true', 'DEV_SIGNIN', 'must not be "true" with RUNTIME_ENV=production (the development sign-in lets anyone sign in as anyone)');
    // security: one NATS authentication method, and a user always with a password
    need(env.METRICS_PORT !== undefined && env.METRICS_PORT === env.PORT, 'METRICS_PORT', `must differ from PORT (${env.PORT}): metrics are never served on the public port`);
    need(Boolean(env.NATS_USER) !== Boolean(env.NATS_PASSWORD), env.NATS_USER ? 'NATS_PASSWORD' : 'NATS_USER', 'NATS_USER and NATS_PASSWORD are set together');
    need([env.NATS_USER, env.NATS_TOKEN, env.NATS_CREDS_FILE].filter(Boolean).length > 1, 'NATS_TOKEN', 'choose one NATS authentication: NATS_USER/NATS_PASSWORD, NATS_TOKEN or NATS_CREDS_FILE');
  })
  .transform((env) => {
    // In development the app is where this process listens, so a PORT=3102 start signs in on 3102.
    const localUrl = `http://localhost:${env.RUNTIME_ENV === 'development' ? env.PORT : 3000}`;
    const PUBLIC_APP_URL = (env.PUBLIC_APP_URL ?? localUrl).replace(/\/+$/, '');
    const AUTH_CALLBACK_URL = (env.AUTH_CALLBACK_URL ?? localUrl).replace(/\/+$/, '');
    return {
      ...env,
      PUBLIC_APP_URL,
      AUTH_CALLBACK_URL,
      WEBAUTHN_RP_ID: env.WEBAUTHN_RP_ID ?? new URL(PUBLIC_APP_URL).hostname,
      // AUTH_TRUST_HOST=true says a proxy is in front: believe that one proxy unless told how many there are.
      TRUST_PROXY_HOPS: env.TRUST_PROXY_HOPS ?? (env.AUTH_TRUST_HOST ? 1 : 0),
      // Mail needs a sender; without SMTP_FROM use the app's name at its own host (and warn).
      SMTP_FROM: env.SMTP_FROM ?? (env.SMTP_HOST ? `${env.WEBAUTHN_RP_NAME} <noreply@${new URL(PUBLIC_APP_URL).hostname}>` : undefined),
      SMTP_FROM_DEFAULTED: Boolean(env.SMTP_HOST && !env.SMTP_FROM),
      UPDATE_CHECK_URL: env.UPDATE_CHECK_URL ?? PROJECT_RELEASES_URL ?? undefined,
      DEV_SIGNIN: env.DEV_SIGNIN === 'true' || (env.DEV_SIGNIN === undefined && env.RUNTIME_ENV === 'development' && !hasRealProvider(env)),
      /** Set by `npm start` once its development OpenID provider listens; never read from the environment. */
      devSignIn: undefined as DevSignInClient | undefined,
    };
  });
}

const envSchema = buildSchema();

/** The development OpenID provider as the auth service must know it (an ordinary OIDC client). */
export interface DevSignInClient {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

function hasRealProvider(env: { CODEHOST_CLIENT_ID?: string | undefined; CHAT_CLIENT_ID?: string | undefined; SEARCH_CLIENT_ID?: string | undefined; CONSUMER_ACCOUNT_CLIENT_ID?: string | undefined; OIDC_ISSUER?: string | undefined }): boolean {
  return Boolean(env.CODEHOST_CLIENT_ID || env.CHAT_CLIENT_ID || env.SEARCH_CLIENT_ID || env.CONSUMER_ACCOUNT_CLIENT_ID || env.OIDC_ISSUER);
}

export type Config = z.infer<typeof envSchema>;

export class ConfigError extends Error {
  readonly problems: { variable: string; message: string }[];
  constructor(problems: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * Parse the environment. Throws one ConfigError listing every bad variable. With `service`, only the
 * variables that service declares (proto/src/service-env.ts) are read, and reading another throws.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, service?: ServiceName): Config {
  const scope = service ? serviceEnv(service) : undefined;
  const r = (scope ? buildSchema(scope, service) : envSchema).safeParse(scope ? Object.fromEntries(Object.entries(env).filter(([k]) => scope.has(k))) : env);
  if (r.success) return scope ? scopedConfig(r.data, service!) : r.data;
  const problems = r.error.issues.map((i) => ({
    variable: String(i.path[0] ?? '(environment)'),
    message: i.code === 'invalid_type' && i.input === undefined ? 'is required' : i.message,
  }));
  throw new ConfigError(problems);
}

export class UndeclaredVariableError extends Error {
  override name = 'UndeclaredVariableError';
}

/**
 * One service's view of the configuration: reading a variable the service does not declare in
 * proto/src/service-env.ts throws, so a missing declaration (which would leave that variable unset
 * in the service's own Deployment) fails the first test that reaches the read. Values that are not
 * variables (devSignIn, SMTP_FROM_DEFAULTED) pass.
 */
export function scopedConfig(config: Config, service: ServiceName): Config {
  const scope = serviceEnv(service);
  const hidden = (k: string | symbol) => typeof k === 'string' && ENV_VARIABLES.has(k) && !scope.has(k);
  const view = new Proxy(config, {
    get(target, k, receiver) {
      if (hidden(k)) throw new UndeclaredVariableError(`the ${service} service reads ${String(k)}, which it does not declare in proto/src/service-env.ts (so its Deployment would not get it)`);
      return Reflect.get(target, k, receiver);
    },
    has: (target, k) => !hidden(k) && Reflect.has(target, k),
    ownKeys: (target) => Reflect.ownKeys(target).filter((k) => !hidden(k)),
    getOwnPropertyDescriptor: (target, k) => (hidden(k) ? undefined : Reflect.getOwnPropertyDescriptor(target, k)),
  });
  scopes.set(view, scope);
  return view;
}

/** The declared variables of each scoped view (configWarnings asks). */
const scopes = new WeakMap<object, ReadonlySet<string>>();

/**
 * Settings that are allowed but probably not what the operator meant: logged at start by every
 * process. (Only REQUIRE_2FA without TOTP_ENCRYPTION_KEY refuses to start, as the spec says.)
 */
export function configWarnings(config: Config): string[] {
  const out: string[] = [];
  // A service run on its own warns only about the variables it reads (scopedConfig hides the others).
  const scope = scopes.get(config);
  const reads = (...vars: (keyof Config)[]) => !scope || vars.every((v) => scope.has(v));
  for (const p of ['CODEHOST', 'CHAT', 'SEARCH', 'CONSUMER_ACCOUNT', 'OIDC'] as const) {
    if (!reads(`${p}_CLIENT_ID`, `${p}_CLIENT_SECRET`)) continue;
    const id = config[`${p}_CLIENT_ID`];
    const secret = config[`${p}_CLIENT_SECRET`];
    if (id && !secret) out.push(`${p}_CLIENT_SECRET is unset although ${p}_CLIENT_ID is set: sign-in with that provider will fail`);
    if (!id && secret) out.push(`${p}_CLIENT_ID is unset although ${p}_CLIENT_SECRET is set: that provider stays off`);
  }
  if (reads('OIDC_ISSUER', 'OIDC_CLIENT_ID')) {
    if (config.OIDC_ISSUER && !config.OIDC_CLIENT_ID) out.push('OIDC_ISSUER is set without OIDC_CLIENT_ID: the OIDC button shows, but sign-in will fail until the client is configured');
    if (config.OIDC_CLIENT_ID && !config.OIDC_ISSUER) out.push('OIDC_CLIENT_ID is set without OIDC_ISSUER: the generic OIDC provider stays off (OIDC_ISSUER activates it)');
  }
  if (reads('PUBLIC_VAPID_PUBLIC_KEY', 'VAPID_PRIVATE_KEY') && Boolean(config.PUBLIC_VAPID_PUBLIC_KEY) !== Boolean(config.VAPID_PRIVATE_KEY)) out.push('PUBLIC_VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY must be set together: browser push stays off');
  if (reads('SMTP_FROM') && config.SMTP_FROM_DEFAULTED) out.push(`SMTP_FROM is unset: mail is sent as ${config.SMTP_FROM}`);
  if (reads('SMTP_USER', 'SMTP_PASS') && config.SMTP_USER && !config.SMTP_PASS) out.push('SMTP_USER is set without SMTP_PASS: the mail server will probably refuse to authenticate');
  if (reads('CRON_SECRET') && !config.CRON_SECRET) out.push('CRON_SECRET is unset: POST /api/cron accepts unauthenticated calls');
  // auth area: passkey-only accounts
  if (reads('SIGNUP_WITH_PASSKEY', 'SIGNUP_INVITE_CODE')) {
    if (config.SIGNUP_WITH_PASSKEY && !config.SIGNUP_INVITE_CODE) out.push('SIGNUP_WITH_PASSKEY is true without SIGNUP_INVITE_CODE: anyone who can reach the site can create an account');
    if (!config.SIGNUP_WITH_PASSKEY && config.SIGNUP_INVITE_CODE) out.push('SIGNUP_INVITE_CODE is set but SIGNUP_WITH_PASSKEY is not true: passkey sign-up stays off');
  }
  if (reads('SECRETS_KEYRING', 'SECRETS_SUBKEYS') && config.SECRETS_KEYRING && config.SECRETS_SUBKEYS) out.push('SECRETS_SUBKEYS is ignored: SECRETS_KEYRING is set too and wins (give a service only its derived ring, SECRETS_SUBKEYS, so it cannot derive the other services\' keys)');
  if (reads('AUTH_CALLBACK_URL') && config.RUNTIME_ENV === 'production' && !config.AUTH_CALLBACK_URL.startsWith('https://')) out.push('AUTH_CALLBACK_URL is not https:// in production: providers will refuse or browsers will drop cookies');
  return out;
}

/** Why the update check does not run (shown in the admin panel), or null when it does. */
export function updateCheckOffReason(config: Pick<Config, 'DISABLE_UPDATE_CHECK' | 'UPDATE_CHECK_URL'>): string | null {
  if (config.DISABLE_UPDATE_CHECK) return 'turned off with DISABLE_UPDATE_CHECK=true';
  if (!config.UPDATE_CHECK_URL) return 'no release listing is configured: this build names no project repository, so set UPDATE_CHECK_URL to the release listing to check';
  return null;
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
