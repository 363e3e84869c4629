import { z } from 'zod';
import type { Rpc } from './bus.ts';
import { exact } from './contracts.ts';

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
  /**
   * the credential's expiry (ISO instant): an API key's, if it has one (a cached identity is never used
   * past it); a session's (the gateway renames a legacy session cookie with it)
   */
  expiresAt: z.string().optional(),
});
export type Identity = z.infer<typeof identity>;

/** `user`: any signed-in caller; `admin`: ADMIN_USER_IDS only; `none`: public; `setup`: signed in, even before a required second factor is set up. */
export type RouteAuth = 'none' | 'user' | 'admin' | 'setup';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A signed link's token, `<base64url payload>.<base64url HMAC>` (runtime signed-token.ts): reminder actions, e-mail confirmation. */
export const signedLinkToken = z.string().max(600).regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'is not a valid link');

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

/**
 * A route whose request body is a file rather than JSON (the import's upload). A bus message has a
 * size limit (NATS: 1 MiB by default), so the gateway takes the raw bytes (any content type, at most
 * `maxBytes`, else 413 PAYLOAD_TOO_LARGE), hands them to the owning service in pieces of
 * UPLOAD_CHUNK_BYTES over `chunk`, in order, and then makes the route's own call with `body` = the
 * upload's `UploadRef`. The service keeps the pieces under the upload's id until that call.
 */
export interface UploadSpec {
  maxBytes: number;
  chunk: Rpc<UploadChunk, UploadChunkAck>;
}

/** Raw bytes per piece of an upload (base64 on the bus: a third more, well under a bus message's limit). */
export const UPLOAD_CHUNK_BYTES = 256 * 1024;

export const uploadChunk = z
  .object({
    user: identity,
    /** chosen by the gateway for one upload */
    uploadId: z.uuid(),
    /** 0, 1, 2… in order */
    seq: z.number().int().min(0).max(100_000),
    /** base64 of at most UPLOAD_CHUNK_BYTES bytes */
    data: z.base64().max(Math.ceil(UPLOAD_CHUNK_BYTES / 3) * 4),
  })
  .strict();
export type UploadChunk = z.infer<typeof uploadChunk>;
export const uploadChunkAck = z.object({ stored: z.literal(true) });
export type UploadChunkAck = z.infer<typeof uploadChunkAck>;

/** What an upload route's service receives as `body`: where the pieces are and what they add up to. */
export const uploadRef = z
  .object({
    id: z.uuid(),
    bytes: z.number().int().min(0),
    chunks: z.number().int().min(0),
    /** SHA-256 (hex) of the whole file, so the service can tell it has every piece */
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    /** the request's Content-Type, as sent (null without one) */
    contentType: z.string().max(200).nullable(),
  })
  .strict();
export type UploadRef = z.infer<typeof uploadRef>;

/**
 * `M`, `Path`, `BIn` and `QIn` keep each route's literal method and path and what its body and query
 * accept (zod's input type) for typed clients: the UI's lib/api.ts picks a route by method and path
 * template, type-only.
 */
export interface HttpRoute<P = unknown, Q = unknown, B = unknown, Res = unknown, M extends HttpMethod = HttpMethod, Path extends string = string, BIn = B, QIn = Q> {
  method: M;
  /** fastify path syntax: `/api/tasks/:id` */
  path: Path;
  auth: RouteAuth;
  params: z.ZodType<P>;
  query: z.ZodType<Q, QIn>;
  body: z.ZodType<B, BIn>;
  response: z.ZodType<Res>;
  /** `raw`: the reply is a RawResponse, not JSON */
  kind: 'json' | 'raw';
  /** status of a successful JSON reply */
  status: number;
  summary: string;
  tag: string;
  rpc: Rpc<HttpCall<P, Q, B>, Res>;
  /** the body is a file (see UploadSpec); `body` is then UploadRef */
  upload?: UploadSpec | undefined;
}

const emptyObject = z.object({}).strict();
type Empty = z.infer<typeof emptyObject>;

export interface RouteSpec<P, Q, B, Res, M extends HttpMethod = HttpMethod, Path extends string = string, BIn = B, QIn = Q> {
  method: M;
  path: Path;
  auth: RouteAuth;
  /** bus subject the owning service serves */
  subject: string;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q, QIn>;
  body?: z.ZodType<B, BIn>;
  response: z.ZodType<Res>;
  kind?: 'json' | 'raw';
  status?: number;
  summary: string;
  tag: string;
  upload?: UploadSpec;
}

export function defineRoute<P = Empty, Q = Empty, B = Empty, Res = unknown, M extends HttpMethod = HttpMethod, Path extends string = string, BIn = B, QIn = Q>(spec: RouteSpec<P, Q, B, Res, M, Path, BIn, QIn>): HttpRoute<P, Q, B, Res, M, Path, BIn, QIn> {
  // The public API's inputs are read exactly on both sides of the bus (contracts.ts): a field the
  // answering release does not know is a 400 naming it, never dropped.
  const params = exact((spec.params ?? emptyObject) as z.ZodType<P>);
  const query = exact((spec.query ?? emptyObject) as z.ZodType<Q, QIn>);
  // GET and DELETE carry no body; the key vanishes on the wire, hence optional.
  const body = exact((spec.body ?? (spec.upload ? uploadRef : spec.method === 'GET' || spec.method === 'DELETE' ? emptyObject.optional() : emptyObject)) as z.ZodType<B, BIn>);
  // The bus request (the call around params, query and body) is built with its first read: only the
  // service serving the route parses with it (the gateway sends calls it has built from checked parts),
  // yet every process defines every route. Built at start, the 112 of them kept 0.56 MB of heap in the
  // gateway, which keeps every route, 0.31 MB in tasks (issue 58, Memory). Read twice, it is the same
  // schema (tolerant() memoises on it).
  let call: z.ZodType<HttpCall<P, Q, B>> | undefined;
  const request = () =>
    (call ??= z.object({
      user: identity.nullable(),
      params,
      query,
      body,
      ip: z.string().optional(),
      userAgent: z.string().optional(),
    }) as unknown as z.ZodType<HttpCall<P, Q, B>>);
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
    rpc: {
      subject: spec.subject,
      get request() {
        return request();
      },
      reply: spec.response,
    },
    upload: spec.upload,
  };
}

/** A heterogeneous list of routes, as the gateway and the OpenAPI generator see them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = HttpRoute<any, any, any, any>;
