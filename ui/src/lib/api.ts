/** The one place the UI talks HTTP. Errors carry the gateway's stable `code` and field issues. */
import type { ApiRoute } from '../../../proto/src/routes.ts';

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

/*
 * The client is typed from proto's route table (`ApiRoute`, imported type-only, so no zod reaches the
 * bundle): a call names the route by method and path template (`'/api/tasks/:id'`), and its params,
 * query and body are checked against that route's schemas (zod's input type), its answer typed as
 * the route's reply. A misspelt body key or a path the gateway does not serve fails the typecheck.
 */
type In<S> = S extends { _input: infer I } ? I : never;
type Out<S> = S extends { _output: infer O } ? O : never;

export type Method = ApiRoute['method'];
/** The path templates of the routes with this method. */
export type PathOf<M extends Method> = Extract<ApiRoute, { method: M }>['path'];
type RouteOf<M extends Method, P extends string> = Extract<ApiRoute, { method: M; path: P }>;
/** What the route's body accepts. */
export type BodyOf<M extends Method, P extends string> = In<RouteOf<M, P>['body']>;
/** What the route answers. */
export type ReplyOf<M extends Method, P extends string> = Out<RouteOf<M, P>['response']>;
type QueryOf<M extends Method, P extends string> = In<RouteOf<M, P>['query']>;

/** `/api/x/:id/y/:deliveryId` → `'id' | 'deliveryId'` */
type ParamName<P extends string> = P extends `${string}:${infer K}/${infer Rest}` ? K | ParamName<Rest> : P extends `${string}:${infer K}` ? K : never;

/** An object without keys: `NoKeys extends T` says that T requires none. */
type NoKeys = Record<never, never>;

/** A call's params (one per `:name` of the path), query and body; what a route does not take is `never`. */
export type Parts<M extends Method, P extends string> = ([ParamName<P>] extends [never] ? { params?: never } : { params: Record<ParamName<P>, string> }) &
  (M extends 'GET' | 'DELETE' ? { body?: never } : NoKeys extends BodyOf<M, P> ? { body?: BodyOf<M, P> } : { body: BodyOf<M, P> }) &
  (NoKeys extends QueryOf<M, P> ? { query?: QueryOf<M, P> } : { query: QueryOf<M, P> });
/** The parts are left out when none is required. */
export type Args<M extends Method, P extends string> = NoKeys extends Parts<M, P> ? [parts?: Parts<M, P>] : [parts: Parts<M, P>];

/** A request ready to send: the URL with params and query filled in. `R` is the reply's type. */
export interface Req<R = unknown, M extends Method = Method> {
  method: M;
  url: string;
  body?: unknown;
  /** type only: what the route answers */
  readonly reply?: R;
}

/** Build the request for a route of the table (for the write queue, or to send later). */
export function request<M extends Method, P extends PathOf<M>>(method: M, path: P, ...[parts]: Args<M, P>): Req<ReplyOf<M, P>, M> {
  const { params = {}, query = {}, body } = (parts ?? {}) as { params?: Record<string, string>; query?: Record<string, string | number | boolean | null | undefined>; body?: unknown };
  const url = path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(params[name] ?? '')) + qs(query);
  // A write without a body sends `{}`: the gateway reads an absent JSON body of a POST as invalid.
  const sent = body ?? (method === 'GET' || method === 'DELETE' ? undefined : {});
  return { method, url, ...(sent === undefined ? {} : { body: sent }) };
}

/**
 * Every write carries an `Idempotency-Key` (a fresh one unless the caller retries with its own), so a
 * request whose answer was lost can be sent again without doing the change twice.
 */
export async function api<R>(req: Req<R>, key?: string): Promise<R> {
  const { method, url, body } = req;
  const headers: Record<string, string> = { accept: 'application/json' };
  const init: RequestInit = { method, credentials: 'same-origin', headers };
  if (method !== 'GET') headers['idempotency-key'] = key ?? newKey();
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached. Check your connection and try again.');
  }
  return answer<R>(res);
}

/** The import's upload: the file as the raw body of the POST, answered and failed as any call. */
export async function upload(query: QueryOf<'POST', '/api/user/import'>, file: Blob): Promise<ReplyOf<'POST', '/api/user/import'>> {
  let res: Response;
  try {
    res = await fetch(`/api/user/import${qs(query)}`, { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json', 'content-type': file.type || 'application/octet-stream' }, body: file });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached. Check your connection and try again.');
  }
  return answer(res);
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

export const get = <P extends PathOf<'GET'>>(path: P, ...parts: Args<'GET', P>) => api(request('GET', path, ...parts));
export const post = <P extends PathOf<'POST'>>(path: P, ...parts: Args<'POST', P>) => api(request('POST', path, ...parts));
export const patch = <P extends PathOf<'PATCH'>>(path: P, ...parts: Args<'PATCH', P>) => api(request('PATCH', path, ...parts));
export const put = <P extends PathOf<'PUT'>>(path: P, ...parts: Args<'PUT', P>) => api(request('PUT', path, ...parts));
export const del = <P extends PathOf<'DELETE'>>(path: P, ...parts: Args<'DELETE', P>) => api(request('DELETE', path, ...parts));

/**
 * A WebAuthn result as the passkey routes take it: SimpleWebAuthn's interfaces lack the index signature
 * of the routes' loose `response` and `clientExtensionResults` (every object has string keys): only the
 * type changes.
 */
export const credential = <T extends { response: object; clientExtensionResults: object }>(result: T) => result as T & { response: Record<string, unknown>; clientExtensionResults: Record<string, unknown> };

/**
 * GETs served outside the route table (Auth.js's own endpoints, the gateway's update status): no body
 * to check, the answer typed by the caller.
 */
export const getOutsideTable = <T>(path: '/api/auth/csrf' | '/api/auth/providers' | '/api/admin/update-status') => api<T>({ method: 'GET', url: path });

/** Build a query string, leaving out empty values. */
function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') sp.set(k, String(v));
  const s = sp.toString();
  return s ? `?${s}` : '';
}
