import { z } from 'zod';
import { defineRpc, type Rpc } from './bus.ts';

/**
 * HTTP routes are declared once, here: the gateway registers them, validates input with these
 * schemas, and forwards a typed call over the bus; the owning service serves the same contract; the
 * OpenAPI document is generated from the same table.
 */

/**
 * An id in a reply, read from a uuid column: its form is PostgreSQL's guarantee, so the reply's check
 * only sees a string (the uuid pattern, run per id, was a tenth of checking a page of tasks). The
 * API documents it as a uuid all the same.
 */
export const storedId = z.string().meta({ format: 'uuid' });

/** Who is calling, as established by the gateway. */
export const identity = z.object({
  id: z.uuid(),
  email: z.string(),
  /** how the caller authenticated */
  method: z.enum(['session', 'api_key', 'test']),
  /** read-only API keys may only GET */
  readOnly: z.boolean(),
  sessionId: z.string().optional(),
  /** the session has passed its second factor (or none is needed) */
  secondFactorOk: z.boolean().default(true),
  isAdmin: z.boolean().default(false),
});
export type Identity = z.infer<typeof identity>;

/** `user`: any signed-in caller; `admin`: ADMIN_USER_IDS only; `none`: public; `setup`: signed in, even before a required second factor is set up. */
export type RouteAuth = 'none' | 'user' | 'admin' | 'setup';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A non-JSON reply (iCal, HTML, redirects): the gateway sends it as given. */
export const rawResponse = z.object({
  status: z.number().int().default(200),
  contentType: z.string(),
  headers: z.record(z.string(), z.string()).default({}),
  body: z.string(),
});
export type RawResponse = z.infer<typeof rawResponse>;

export interface HttpCall<P, Q, B> {
  user: Identity | null;
  params: P;
  query: Q;
  body: B;
  /** client address as seen by the gateway, for audit and sessions */
  ip?: string | undefined;
  userAgent?: string | undefined;
}

export interface HttpRoute<P = unknown, Q = unknown, B = unknown, Res = unknown> {
  method: HttpMethod;
  /** fastify path syntax: `/api/tasks/:id` */
  path: string;
  auth: RouteAuth;
  params: z.ZodType<P>;
  query: z.ZodType<Q>;
  body: z.ZodType<B>;
  response: z.ZodType<Res>;
  /** `raw`: the reply is a RawResponse, not JSON */
  kind: 'json' | 'raw';
  /** status of a successful JSON reply */
  status: number;
  summary: string;
  tag: string;
  rpc: Rpc<HttpCall<P, Q, B>, Res>;
}

const emptyObject = z.object({}).strict();
type Empty = z.infer<typeof emptyObject>;

export interface RouteSpec<P, Q, B, Res> {
  method: HttpMethod;
  path: string;
  auth: RouteAuth;
  /** bus subject the owning service serves */
  subject: string;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  response: z.ZodType<Res>;
  kind?: 'json' | 'raw';
  status?: number;
  summary: string;
  tag: string;
}

export function defineRoute<P = Empty, Q = Empty, B = Empty, Res = unknown>(spec: RouteSpec<P, Q, B, Res>): HttpRoute<P, Q, B, Res> {
  const params = (spec.params ?? emptyObject) as z.ZodType<P>;
  const query = (spec.query ?? emptyObject) as z.ZodType<Q>;
  // GET and DELETE carry no body; the key vanishes on the wire, hence optional.
  const body = (spec.body ?? (spec.method === 'GET' || spec.method === 'DELETE' ? emptyObject.optional() : emptyObject)) as z.ZodType<B>;
  const call = z.object({
    user: identity.nullable(),
    params,
    query,
    body,
    ip: z.string().optional(),
    userAgent: z.string().optional(),
  }) as unknown as z.ZodType<HttpCall<P, Q, B>>;
  return {
    method: spec.method,
    path: spec.path,
    auth: spec.auth,
    params,
    query,
    body,
    response: spec.response,
    kind: spec.kind ?? 'json',
    status: spec.status ?? (spec.method === 'POST' ? 201 : 200),
    summary: spec.summary,
    tag: spec.tag,
    rpc: defineRpc(spec.subject, call, spec.response),
  };
}

/** A heterogeneous list of routes, as the gateway and the OpenAPI generator see them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = HttpRoute<any, any, any, any>;
