// Unix socket protocol (easywall 2.x shape): one JSON request per connection. The client writes
// `{type, payload}` and half-closes; the server reads to EOF, replies `{success, data?, error?}`, closes.
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { dirname } from 'node:path';
import { FirewallCore } from './core.ts';
import { UserError, type FirewallErrorCode } from './errors.ts';

/** Large enough for a million-entry blacklist import, small enough to bound a hostile peer. */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
const IDLE_MS = 30_000;

export interface Reply {
  success: boolean;
  data?: unknown;
  error?: string;
  /** set on every error reply */
  code?: FirewallErrorCode;
}

export type Request = { type?: unknown; payload?: unknown };

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** Caller name recorded in the audit log (the web component passes `web:<user>`). */
function actorOf(payload: Record<string, unknown>): string {
  const a = payload.actor;
  return typeof a === 'string' && a.length > 0 && a.length <= 100 ? a : 'socket';
}

export function dispatch(core: FirewallCore, req: Request): Reply {
  const payload = obj(req.payload);
  const actor = actorOf(payload);
  try {
    switch (req.type) {
      case 'GET_STATUS':
        return { success: true, data: core.status() };
      case 'GET_RULES':
        return { success: true, data: core.rules() };
      case 'SAVE_RULES':
        return { success: true, data: core.saveRules(payload.rule_type, payload.rules, actor) };
      case 'EXPORT_RULES':
        return { success: true, data: core.rules().staged };
      case 'IMPORT_RULES':
        return { success: true, data: core.importRules(payload.rules ?? req.payload, actor) };
      case 'APPLY_RULES':
        return { success: true, data: core.apply(actor) };
      case 'ACCEPT':
      case 'CONFIRM':
      case 'CONFIRM_RULES':
        return { success: true, data: core.accept(actor) };
      case 'ROLLBACK':
        return { success: true, data: core.rollbackNow(actor) };
      case 'OFF':
        return { success: true, data: core.off(actor) };
      case 'GET_OPTIONS':
        return { success: true, data: core.config };
      case 'SAVE_OPTIONS':
        return { success: true, data: core.saveOptions(payload.options, actor) };
      case 'RELOAD_OPTIONS': {
        const r = core.reload(actor);
        return r.ok ? { success: true, data: core.config } : { success: false, code: 'RELOAD_FAILED', error: r.error ?? 'reload failed' };
      }
      case 'GET_LOG':
      case 'GET_AUDIT_LOG': {
        const limit = typeof payload.limit === 'number' && payload.limit > 0 ? Math.min(payload.limit, 1000) : 200;
        return { success: true, data: core.audit.tail(limit) };
      }
      default:
        return { success: false, code: 'UNKNOWN_REQUEST', error: `unknown request type: ${String(req.type)}` };
    }
  } catch (e) {
    if (e instanceof UserError) return { success: false, code: e.code, error: e.message };
    // Name the cause (e.g. "EROFS: read-only file system, open '/etc/task-firewall/…'"), never a bare "internal error".
    core.log.error({ err: e, type: req.type }, 'request failed');
    return { success: false, code: 'INTERNAL', error: `${String(req.type)} failed: ${(e as Error).message}` };
  }
}

/** Numeric gid of a group name (or a numeric string), from /etc/group. */
export function resolveGroup(group: string): number | undefined {
  if (/^\d+$/.test(group)) return Number(group);
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [name, , gid] = line.split(':');
      if (name === group && gid) return Number(gid);
    }
  } catch {
    // No /etc/group: fall through to undefined.
  }
  return undefined;
}

export interface SocketOptions {
  path: string;
  /** Group that may use the socket (the web component's group); mode is 0660 either way. */
  group?: string;
}

export async function listenSocket(core: FirewallCore, opts: SocketOptions): Promise<Server> {
  mkdirSync(dirname(opts.path), { recursive: true, mode: 0o755 });
  if (existsSync(opts.path)) unlinkSync(opts.path); // a stale socket of a previous (killed) daemon
  const server = createServer({ allowHalfOpen: true }, (sock) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const reply = (r: Reply) => {
      if (done) return;
      done = true;
      sock.end(JSON.stringify(r));
    };
    sock.setTimeout(IDLE_MS, () => sock.destroy());
    sock.on('error', () => sock.destroy());
    sock.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES) {
        reply({ success: false, code: 'BAD_REQUEST', error: `request larger than ${MAX_REQUEST_BYTES} bytes` });
        sock.destroySoon();
        return;
      }
      if (!done) chunks.push(c);
    });
    sock.on('end', () => {
      if (done) return;
      let req: Request;
      try {
        req = obj(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reply({ success: false, code: 'BAD_REQUEST', error: 'request is not valid JSON' });
        return;
      }
      reply(dispatch(core, req));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.path, () => resolve());
  });
  chmodSync(opts.path, 0o660);
  if (opts.group) {
    const gid = resolveGroup(opts.group);
    if (gid === undefined) core.log.warn({ group: opts.group }, 'socket group not found; socket stays root-only');
    else chownSync(opts.path, process.getuid?.() ?? 0, gid);
  }
  return server;
}

/** Send one request and wait for the reply (used by the web component, the CLI and tests). */
export function request(socketPath: string, type: string, payload: unknown = {}, timeoutMs = 60_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ path: socketPath, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    sock.setTimeout(timeoutMs, () => {
      sock.destroy();
      reject(new Error(`firewall socket ${socketPath} timed out`));
    });
    sock.on('connect', () => sock.end(JSON.stringify({ type, payload })));
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', reject);
    sock.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Reply);
      } catch {
        reject(new Error('firewall socket sent an invalid reply'));
      }
    });
  });
}
