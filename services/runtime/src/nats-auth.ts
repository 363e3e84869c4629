import { readFileSync } from 'node:fs';
import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';

/** The configuration this module reads (config.ts, "security: NATS authentication"). */
export interface NatsAuthConfig {
  RUNTIME_ENV: string;
  NATS_USER?: string | undefined;
  NATS_PASSWORD?: string | undefined;
  NATS_TOKEN?: string | undefined;
  NATS_CREDS_FILE?: string | undefined;
  NATS_TLS_CA_FILE?: string | undefined;
  NATS_ALLOW_ANONYMOUS: boolean;
}

export interface NatsAuthOptions {
  /** connection options: user+password, token or creds file (nkey/JWT), and the CA for TLS */
  connect: Partial<ConnectionOptions>;
  /** refuse a server that does not require authentication (production without NATS_ALLOW_ANONYMOUS) */
  requireAuthentication: boolean;
}

/**
 * The bus carries the caller's identity in each message, so whoever may publish may act as any
 * user: the NATS server must authenticate its clients. This turns the NATS_* variables into
 * connection options (config.ts already checked the combinations and that the files exist).
 */
export function natsAuthOptions(config: NatsAuthConfig): NatsAuthOptions {
  const connect: Partial<ConnectionOptions> = {};
  if (config.NATS_USER) Object.assign(connect, { user: config.NATS_USER, pass: config.NATS_PASSWORD });
  if (config.NATS_TOKEN) connect.token = config.NATS_TOKEN;
  if (config.NATS_CREDS_FILE) connect.authenticator = credsAuthenticator(readFileSync(config.NATS_CREDS_FILE));
  if (config.NATS_TLS_CA_FILE) connect.tls = { caFile: config.NATS_TLS_CA_FILE };
  return { connect, requireAuthentication: config.RUNTIME_ENV === 'production' && !config.NATS_ALLOW_ANONYMOUS };
}

/** Why a connected server is refused, or null: it must have asked for authentication. */
export function anonymousServerProblem(info: { auth_required?: boolean } | undefined, requireAuthentication: boolean): string | null {
  if (!requireAuthentication || info?.auth_required) return null;
  return 'the NATS server accepts clients without authentication: anyone who can reach it can act as any user. Configure authentication on the server and set NATS_USER/NATS_PASSWORD, NATS_TOKEN or NATS_CREDS_FILE, or set NATS_ALLOW_ANONYMOUS=true to accept this risk';
}
