import { z } from 'zod';
import { defineRpc } from './bus.ts';
import { identity } from './http.ts';

/**
 * CalDAV (RFC 4791/6578/6764) over the bus. The gateway accepts the DAV methods under `DAV_ROOT`
 * (and answers `/.well-known/caldav` with a redirect there), authenticates HTTP Basic (the user's
 * e-mail and an API key as app password), counts writes against the rate limit and forwards the
 * request as it came; the tasks service does the DAV work and answers status, headers and body.
 * A long multistatus comes in pages (each reply stays far below NATS's 1 MB message limit): a
 * reply with `next` is continued by the same request carrying `cursor: next`, and the gateway
 * writes the pages' bodies one after another as one HTTP response.
 */

export const DAV_ROOT = '/dav';
export const WELL_KNOWN_CALDAV = '/.well-known/caldav';

/** Methods the gateway forwards; the others are answered 405 there. */
export const DAV_METHODS = ['OPTIONS', 'PROPFIND', 'PROPPATCH', 'REPORT', 'GET', 'HEAD', 'PUT', 'DELETE', 'MKCALENDAR', 'MKCOL', 'MOVE'] as const;
/** Methods that change nothing: a read-only key may use them. */
export const DAV_READ_METHODS: readonly string[] = ['OPTIONS', 'PROPFIND', 'REPORT', 'GET', 'HEAD'];

/** Request headers DAV needs; the gateway forwards these only (lower-case names). */
export const DAV_HEADERS = ['depth', 'if-match', 'if-none-match', 'destination', 'overwrite', 'content-type', 'prefer', 'brief', 'user-agent'] as const;

/** A request body's limit: one task's .ics, or a REPORT listing hrefs. */
export const DAV_BODY_LIMIT = 512 * 1024;

export const davRequest = z.object({
  user: identity,
  method: z.enum(DAV_METHODS),
  /** the request path as sent (percent-encoded), without the query */
  path: z.string().max(4096),
  headers: z.record(z.string(), z.string().max(8192)),
  body: z.string().max(DAV_BODY_LIMIT).optional(),
  /** continuation of a paged reply (the previous reply's `next`) */
  cursor: z.string().max(4096).optional(),
});
export type DavRequest = z.infer<typeof davRequest>;

export const davReply = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  /** more of the body follows: ask again with this cursor */
  next: z.string().optional(),
});
export type DavReply = z.infer<typeof davReply>;

export const davRpc = defineRpc('tasks.dav', davRequest, davReply);

/** Writes per user and minute over CalDAV (a first sync uploads a client's whole list). */
export const DAV_WRITES_PER_MINUTE = 600;
