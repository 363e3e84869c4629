import type { ServiceName } from './bus.ts';

/**
 * Which environment variables each service reads: the one declaration behind
 * - the services' configuration (runtime/config.ts): a service run on its own parses only these, and a
 *   service reading a variable it did not declare throws (runtime/service.ts `scopedConfig`, so every
 *   test that starts a service checks its declaration);
 * - the operator (operator/src/desired.ts): each Deployment gets a `secretKeyRef` for the secret
 *   variables its service declares and no other;
 * - docs/kubernetes.md and docs/upgrading.md ("Which service gets which secret").
 * `npm start` still takes one environment: all six services in one process share it.
 */

/** Read by the runtime in every service process: database, bus, logs, probes, traces, shutdown. */
export const SHARED_ENV = [
  'DATABASE_URL',
  'DATABASE_PREPARED_STATEMENTS',
  'NATS_URL',
  'NATS_USER',
  'NATS_PASSWORD',
  'NATS_TOKEN',
  'NATS_CREDS_FILE',
  'NATS_TLS_CA_FILE',
  'NATS_ALLOW_ANONYMOUS',
  'NATS_STREAM_REPLICAS',
  'RUNTIME_ENV',
  'LOG_LEVEL',
  'HEALTH_PORT',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_TRACES_SAMPLER_ARG',
  'SHUTDOWN_DELAY_SECONDS',
  'SERVICE_COMMIT',
] as const;

const IDENTITY_PROVIDERS = [
  'CODEHOST_CLIENT_ID',
  'CODEHOST_CLIENT_SECRET',
  'CHAT_CLIENT_ID',
  'CHAT_CLIENT_SECRET',
  'SEARCH_CLIENT_ID',
  'SEARCH_CLIENT_SECRET',
  'CONSUMER_ACCOUNT_CLIENT_ID',
  'CONSUMER_ACCOUNT_CLIENT_SECRET',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_ISSUER',
] as const;

/**
 * Read by the webhook and notifier services to open secrets sealed before SECRETS_KEYRING was set:
 * TOTP_ENCRYPTION_KEY opens the pre-ring form until `tools/keys.ts status` shows nothing under
 * `legacy`; AUTH_SECRET derives the ring key of an installation without SECRETS_KEYRING. A deployment
 * that always sets SECRETS_KEYRING and has re-sealed (the operator) leaves AUTH_SECRET out of them.
 */
export const RING_FALLBACK_ENV = ['TOTP_ENCRYPTION_KEY', 'AUTH_SECRET'] as const;

/**
 * The ring services' key ring: the master SECRETS_KEYRING (`npm start`, or a deployment that has not
 * split it yet), or SECRETS_SUBKEYS, the subkeys of this service's purposes already derived from it
 * (proto/src/ring-keys.ts; what the operator and compose give each service). SECRETS_KEYRING wins when
 * both are set (a warning says SECRETS_SUBKEYS is ignored).
 */
export const RING_ENV = ['SECRETS_KEYRING', 'SECRETS_SUBKEYS'] as const;

/** Each service's own variables, besides SHARED_ENV. */
export const SERVICE_ENV = {
  gateway: [
    'HOST',
    'PORT',
    'METRICS_PORT',
    'PUBLIC_APP_URL',
    'AUTH_CALLBACK_URL',
    'AUTH_TRUST_HOST',
    'TRUST_PROXY_HOPS',
    'ADMIN_USER_IDS',
    'CRON_SECRET',
    'RATE_LIMIT_WRITES',
    'PUBLIC_IMPRINT_NAME',
    'PUBLIC_IMPRINT_ADDRESS',
    'PUBLIC_IMPRINT_EMAIL',
    'PUBLIC_IMPRINT_PHONE',
  ],
  auth: [
    // sessions are HMAC'd under AUTH_SECRET; TOTP secrets are sealed under TOTP_ENCRYPTION_KEY
    'AUTH_SECRET',
    'TOTP_ENCRYPTION_KEY',
    'REQUIRE_2FA',
    'PUBLIC_APP_URL',
    'AUTH_CALLBACK_URL',
    ...IDENTITY_PROVIDERS,
    'WEBAUTHN_RP_ID',
    'WEBAUTHN_RP_NAME',
    'SIGNUP_WITH_PASSKEY',
    'SIGNUP_INVITE_CODE',
  ],
  // AUTH_SECRET: the key of the signed links in reminder messages (tasks/handlers/reminders.ts)
  tasks: ['AUTH_SECRET', 'PUBLIC_APP_URL'],
  notifier: [
    ...RING_ENV,
    ...RING_FALLBACK_ENV,
    'PUBLIC_APP_URL',
    'OUTBOUND_ALLOW_LIST',
    'NTFY_DEFAULT_SERVER',
    'PUSHOVER_API_URL',
    'TELEGRAM_API_URL',
    'SMTP_HOST',
    'SMTP_PORT',
    'SMTP_USER',
    'SMTP_PASS',
    'SMTP_FROM',
    'SMTP_SECURE',
    'SMTP_TLS_CA_FILE',
    'PUBLIC_VAPID_PUBLIC_KEY',
    'VAPID_PRIVATE_KEY',
    'VAPID_CONTACT',
  ],
  webhook: [...RING_ENV, ...RING_FALLBACK_ENV, 'OUTBOUND_ALLOW_LIST', 'WEBHOOK_RETRY_SCHEDULE', 'WEBHOOK_TIMEOUT_SECONDS', 'WEBHOOK_DISABLE_AFTER_HOURS'],
  scheduler: ['UPDATE_CHECK_URL', 'DISABLE_UPDATE_CHECK'],
} as const satisfies Record<ServiceName, readonly string[]>;

/** Read by the launchers, never by a service: compose's database container, `npm start`'s development sign-in. */
export const LAUNCHER_ENV = ['POSTGRES_PASSWORD', 'DEV_SIGNIN'] as const;

/** Variables whose value is a secret: passed from a Secret, per key, and only to the services that declare them. */
export const SECRET_ENV: ReadonlySet<string> = new Set([
  'DATABASE_URL',
  'AUTH_SECRET',
  'CRON_SECRET',
  'TOTP_ENCRYPTION_KEY',
  'SECRETS_KEYRING',
  'SECRETS_SUBKEYS',
  'NATS_USER',
  'NATS_PASSWORD',
  'NATS_TOKEN',
  ...IDENTITY_PROVIDERS.filter((v) => v.endsWith('_SECRET')),
  'SMTP_PASS',
  'VAPID_PRIVATE_KEY',
  'SIGNUP_INVITE_CODE',
  'POSTGRES_PASSWORD',
]);

/** Everything one service may read: SHARED_ENV and its own. */
export function serviceEnv(service: ServiceName): ReadonlySet<string> {
  return new Set<string>([...SHARED_ENV, ...SERVICE_ENV[service]]);
}
