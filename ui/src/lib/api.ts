/** The one place the UI talks HTTP. Errors carry the gateway's stable `code` and field issues. */

export interface Issue {
  path: string;
  message: string;
  /** an import file's issue: the file, its row or line, its column or property */
  file?: string;
  row?: number;
  field?: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly issues: Issue[];
  /** seconds the server asked to wait before a retry (`Retry-After`), when it did */
  readonly retryAfter: number | undefined;
  constructor(status: number, code: string, message: string, issues: Issue[] = [], retryAfter?: number) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.issues = issues;
    this.retryAfter = retryAfter;
  }
  /** The request never got an answer (offline, server unreachable): it may be sent again. */
  get unreachable(): boolean {
    return this.status === 0;
  }
  /** The message for one form field (`body.title` → `title`). */
  fieldError(field: string): string | undefined {
    return this.issues.find((i) => i.path === `body.${field}` || i.path === field)?.message;
  }
}

type Listener = (err: ApiError) => void;
const listeners = new Set<Listener>();

/** The shell subscribes to send the user to sign-in or to the forced 2FA setup, wherever they are. */
export function onAuthError(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/**
 * A fresh Idempotency-Key (docs/api.md): one per intended change, sent again on every retry of it.
 * `crypto.randomUUID` exists only in secure contexts; a plain-http LAN address gets random bytes.
 */
export function newKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Every write carries an `Idempotency-Key` (a fresh one unless the caller retries with its own), so a
 * request whose answer was lost can be sent again without doing the change twice.
 */
export async function api<T = unknown>(method: string, path: string, body?: unknown, key?: string): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const init: RequestInit = { method, credentials: 'same-origin', headers };
  if (method !== 'GET' && method !== 'HEAD') headers['idempotency-key'] = key ?? newKey();
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached. Check your connection and try again.');
  }
  return answer<T>(res);
}

/** A file as the raw body of a POST (the import's upload): answered and failed as any call. */
export async function upload<T = unknown>(path: string, file: Blob): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json', 'content-type': file.type || 'application/octet-stream' }, body: file });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached. Check your connection and try again.');
  }
  return answer<T>(res);
}

async function answer<T>(res: Response): Promise<T> {
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = text;
  }
  if (!res.ok) {
    const b = (data ?? {}) as { code?: string; message?: string; issues?: Issue[] };
    const retry = Number(res.headers.get('retry-after'));
    const err = new ApiError(res.status, b.code ?? `HTTP_${res.status}`, b.message ?? res.statusText, b.issues ?? [], res.headers.has('retry-after') && Number.isFinite(retry) ? retry : undefined);
    if (res.status === 401 || err.code === 'SECOND_FACTOR_REQUIRED') for (const l of listeners) l(err);
    throw err;
  }
  return data as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);

/** Build a query string, leaving out empty values. */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') sp.set(k, String(v));
  const s = sp.toString();
  return s ? `?${s}` : '';
}
