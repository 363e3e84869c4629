// The only reader of environment variables in this package.
import { readFileSync } from 'node:fs';

export interface WebEnv {
  port: number;
  host: string;
  password: string | undefined;
  /** PEM files: when both are set the web component serves HTTPS itself (and the cookie is Secure). */
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** Behind a TLS-terminating proxy: mark the session cookie Secure although we serve plain HTTP. */
  secureCookie: boolean;
  /** Host header names accepted (DNS-rebinding guard); the bind address and loopback names always are. */
  allowedHosts: string[];
}

export interface Endpoint {
  host: string;
  port: number;
}

function list(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function portOf(name: string, raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65535) throw new Error(`${name} must be a port number 1-65535, got ${raw}`);
  return port;
}

export function socketGroup(): string | undefined {
  return process.env.FIREWALL_SOCKET_GROUP || undefined;
}

/** FIREWALL_WEB_PORT (default 8080): the web component listens there and the first start opens it. */
export function webPort(): number {
  return portOf('FIREWALL_WEB_PORT', process.env.FIREWALL_WEB_PORT ?? '8080');
}

/** FIREWALL_WEB_PASSWORD, else the first line of FIREWALL_WEB_PASSWORD_FILE. */
export function webEnv(): WebEnv {
  const port = webPort();
  let password = process.env.FIREWALL_WEB_PASSWORD || undefined;
  const file = process.env.FIREWALL_WEB_PASSWORD_FILE;
  if (!password && file) password = readFileSync(file, 'utf8').split('\n')[0]?.trim() || undefined;
  const tlsCertFile = process.env.FIREWALL_WEB_TLS_CERT_FILE || undefined;
  const tlsKeyFile = process.env.FIREWALL_WEB_TLS_KEY_FILE || undefined;
  if (!!tlsCertFile !== !!tlsKeyFile) throw new Error('FIREWALL_WEB_TLS_CERT_FILE and FIREWALL_WEB_TLS_KEY_FILE must be set together');
  const secure = process.env.FIREWALL_WEB_SECURE_COOKIE ?? '';
  if (!['', 'true', 'false'].includes(secure)) throw new Error(`FIREWALL_WEB_SECURE_COOKIE must be true or false, got ${secure}`);
  return {
    port,
    host: process.env.FIREWALL_WEB_HOST || '127.0.0.1',
    password,
    tlsCertFile,
    tlsKeyFile,
    secureCookie: secure === 'true' || !!tlsCertFile,
    allowedHosts: list('FIREWALL_WEB_ALLOWED_HOSTS').map((h) => h.toLowerCase()),
  };
}

/**
 * FIREWALL_SELF_CONFIRM=tcp:HOST:PORT[,tcp:HOST:PORT…]: a pending apply is confirmed by the daemon
 * itself once every endpoint accepts a TCP connection under the new rules. IPv6 hosts in brackets.
 */
export function selfConfirmEndpoints(): Endpoint[] {
  return list('FIREWALL_SELF_CONFIRM').map((item) => {
    const m = /^tcp:(\[[0-9A-Fa-f:.]+\]|[^:[\]]+):(\d+)$/.exec(item);
    if (!m) throw new Error(`FIREWALL_SELF_CONFIRM: "${item}" is not tcp:HOST:PORT`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port: portOf('FIREWALL_SELF_CONFIRM', m[2]!) };
  });
}

/**
 * FIREWALL_EXTERNAL_INTERFACES (comma-separated names, `eth*` globs): where the bogon filter applies.
 * Unset: the interfaces carrying a default route.
 */
export function externalInterfaces(): string[] | undefined {
  return process.env.FIREWALL_EXTERNAL_INTERFACES === undefined ? undefined : list('FIREWALL_EXTERNAL_INTERFACES');
}

export function logLevel(): string {
  return process.env.LOG_LEVEL || 'info';
}
