// The only reader of environment variables in this package.
import { readFileSync } from 'node:fs';

export interface WebEnv {
  port: number;
  host: string;
  password: string | undefined;
}

export function socketGroup(): string | undefined {
  return process.env.FIREWALL_SOCKET_GROUP || undefined;
}

/** FIREWALL_WEB_PASSWORD, else the first line of FIREWALL_WEB_PASSWORD_FILE. */
export function webEnv(): WebEnv {
  const rawPort = process.env.FIREWALL_WEB_PORT ?? '8080';
  const port = Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`FIREWALL_WEB_PORT must be a port number, got ${rawPort}`);
  let password = process.env.FIREWALL_WEB_PASSWORD || undefined;
  const file = process.env.FIREWALL_WEB_PASSWORD_FILE;
  if (!password && file) password = readFileSync(file, 'utf8').split('\n')[0]?.trim() || undefined;
  return { port, host: process.env.FIREWALL_WEB_HOST || '0.0.0.0', password };
}

export function logLevel(): string {
  return process.env.LOG_LEVEL || 'info';
}
