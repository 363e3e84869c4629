// The identity double moved to tools/testenv; re-exported for the tests and tools/bench/api.ts that import it here.
export { serveTestIdentities } from '../../../tools/testenv/index.ts';

// Tests read loosely-typed JSON bodies and assert on their shape.
/* eslint-disable @typescript-eslint/no-explicit-any */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** A small HTTP client for one user against a running gateway. */
export function apiClient(baseUrl: string) {
  return async function api<T = any>(method: string, path: string, opts: { as?: string; ro?: boolean; body?: unknown } = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = {};
    if (opts.as) headers.authorization = `Bearer ${opts.ro ? 'ro' : 'test'}-${opts.as}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
    const text = await res.text();
    let body: any = text;
    if ((res.headers.get('content-type') ?? '').includes('application/json')) body = text ? JSON.parse(text) : null;
    return { status: res.status, body: body as T, text, headers: res.headers };
  };
}
