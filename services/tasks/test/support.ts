import { resolveIdentityRpc } from '@tasksvc/proto';
import type { Bus, Subscription } from '@tasksvc/runtime';

/**
 * TEST DOUBLE for the auth service's identity resolution (the real one is built separately):
 * `Authorization: Bearer test-<uuid>` is a read-write user with that id, `Bearer ro-<uuid>` the
 * same user through a read-only API key; anything else is anonymous.
 */
export function serveTestIdentities(bus: Bus): Subscription {
  return bus.serve(resolveIdentityRpc, async ({ authorization }) => {
    const m = /^Bearer (test|ro)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(authorization ?? '');
    if (!m) return null;
    return { id: m[2]!, email: `${m[2]}@example.test`, method: 'test' as const, readOnly: m[1] === 'ro', secondFactorOk: true, isAdmin: false };
  });
}

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
