import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { authService } from '../../auth/src/service.ts';
import { gatewayService } from '../../gateway/src/service.ts';
import { tasksService } from '../src/service.ts';
import { startSystem, type RunningSystem } from '../../../tools/system.ts';
import { quietLogger, testSystemConfig } from '../../../tools/testenv/index.ts';

/**
 * The system a CalDAV client talks to: the real gateway, auth service (app passwords are API keys
 * in auth.api_keys, seeded the way the acceptance checks seed them) and tasks service, over a real
 * nats-server when given one.
 */
export interface CaldavSystem {
  system: RunningSystem;
  url: string;
  /** a user with an app password (an API key, `ts_live_…`) */
  user(opts?: { readOnly?: boolean; email?: string }): Promise<DavUser>;
  /** another app password of the same user */
  key(userId: string, readOnly?: boolean): Promise<string>;
  stop(): Promise<void>;
}

export interface DavUser {
  id: string;
  email: string;
  key: string;
  /** `Authorization: Basic` of e-mail and key */
  basic: string;
  /** the REST API as this user (Bearer key) */
  api<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export async function startCaldavSystem(natsUrl?: string, env: Record<string, string> = {}): Promise<CaldavSystem> {
  const config = await testSystemConfig({ NATS_URL: natsUrl, ...env });
  const system = await startSystem(config, { log: quietLogger(), services: [authService, tasksService, gatewayService] });
  const key = async (userId: string, readOnly = false) => {
    const k = `ts_live_${randomBytes(32).toString('base64url')}`;
    await system.pool.query('INSERT INTO auth.api_keys (user_id, name, display_prefix, key_hash, read_only) VALUES ($1, $2, $3, $4, $5)', [userId, 'CalDAV test', k.slice(0, 14), createHash('sha256').update(k).digest('hex'), readOnly]);
    return k;
  };
  return {
    system,
    url: system.url,
    key,
    async user(opts = {}) {
      const id = randomUUID();
      const email = opts.email ?? `${id.slice(0, 8)}@example.test`;
      await system.pool.query('INSERT INTO auth.users (id, email, name) VALUES ($1, $2, $3)', [id, email, 'CalDAV tester']);
      const k = await key(id, opts.readOnly ?? false);
      return {
        id,
        email,
        key: k,
        basic: `Basic ${Buffer.from(`${email}:${k}`).toString('base64')}`,
        async api(method, path, body) {
          const res = await fetch(`${system.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${k}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          const text = await res.text();
          return { status: res.status, body: text && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text };
        },
      };
    },
    stop: () => system.stop(),
  };
}
