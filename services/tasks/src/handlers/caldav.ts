import { createHash } from 'node:crypto';
import ICAL from 'ical.js';
import { AppError, DAV_READ_METHODS, DAV_ROOT, type CreateTaskBody, type DavReply, type DavRequest, type UpdateTaskBody } from '@tasksvc/proto';
import { localDate, startOfLocalDay } from '@tasksvc/proto/calendar/dates.ts';
import { advanceOnCompletion, occurrenceAfter } from '@tasksvc/proto/calendar/recurrence.ts';
import { inTransaction, type PoolClient, type Queryable } from '@tasksvc/runtime';
import type { Element } from '@xmldom/xmldom';
import { child, children, clark, nameOf, NS, parseXml, textOf, XmlError, XmlWriter, multistatusPage } from '../domain/dav-xml.ts';
import { keepCategories, keepParentLink, parseCalendarObject, sameReminders, taskToVtodo, vtodoCalendar, type VtodoTask } from '../domain/vtodo.ts';
import { taskUid } from '../domain/icalendar.ts';
import {
  CALDAV_TOMBSTONE_DAYS,
  collectionBySegment,
  collectionMembers,
  INBOX,
  listCollections,
  lockTask,
  membersByIds,
  membersByNames,
  removedSince,
  saveObject,
  posText,
  syncState,
  syncXid,
  type SyncPos,
  taskIdByName,
  taskIdByUid,
  type Collection,
  type Member,
} from '../db/caldav.ts';
import { ensureProfile } from '../db/profiles.ts';
import { getTask, updateTask } from '../db/tasks.ts';
import { deleteTopic, insertTopic, updateTopic } from '../db/topics.ts';
import { detachTopic } from '../db/tasks.ts';
import { createIn, removeIn, updateIn } from './tasks.ts';
import { completeIn, undoCompleteIn } from './completion.ts';
import { emitTaskEvent, ruleOf, type Ctx } from './common.ts';

/**
 * The CalDAV server (RFC 4791 calendar access, RFC 6578 sync, RFC 4918 WebDAV): the gateway hands
 * each request under /dav over the bus (proto/src/caldav.ts) with the caller's identity; this
 * answers it. Layout:
 *   /dav/                                     root (current-user-principal)
 *   /dav/principals/<user id>/                the principal (calendar-home-set)
 *   /dav/calendars/<user id>/                 the calendar home
 *   /dav/calendars/<user id>/tasks/           the tasks without a topic
 *   /dav/calendars/<user id>/<topic>/         one collection per topic (its id, or the name a client gave it)
 *   /dav/calendars/<user id>/<topic>/<name>   a task (`<task id>.ics`, or the name a client PUT it under)
 * Writes go through the REST handlers' own functions (createIn, updateIn, completeIn, …): coins,
 * streaks and events are the same as a click. A task's ETag is a digest of its text, which is a
 * function of the task (vtodo.ts), so it is strong and changes with every change a client can see.
 */

const PAGE = 200;
const TOKEN_PREFIX = 'urn:tasksvc:sync:';
const XML = 'application/xml; charset=utf-8';
const ICS = 'text/calendar; charset=utf-8; component=VTODO';
const DAV_HEADER = '1, 3, calendar-access';
const ALLOW = 'OPTIONS, PROPFIND, PROPPATCH, REPORT, GET, HEAD, PUT, DELETE, MKCALENDAR, MKCOL, MOVE';

const D = (n: string) => clark(NS.D, n);
const C = (n: string) => clark(NS.C, n);
const CS = (n: string) => clark(NS.CS, n);
const A = (n: string) => clark(NS.A, n);

/** A DAV answer that ends the request (thrown from anywhere below, answered by `handleDav`). */
class DavStatus extends Error {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string>;
  constructor(status: number, body = '', headers: Record<string, string> = {}) {
    super(`DAV ${status}`);
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

/** An error body (RFC 4918 §16): the precondition(s) and, for a person, what went wrong. */
function davError(status: number, conditions: string[], message?: string, build?: (w: XmlWriter) => Element[]): DavStatus {
  const w = new XmlWriter(D('error'));
  for (const c of conditions) w.root.appendChild(w.el(c, ...(build ? build(w) : [])));
  if (message) w.root.appendChild(w.el(clark(NS.TS, 'message'), message));
  return new DavStatus(status, w.toString(), { 'content-type': XML });
}

const badRequest = (message: string) => new DavStatus(400, `${message}\n`, { 'content-type': 'text/plain; charset=utf-8' });
const notFound = () => new DavStatus(404, 'not found\n', { 'content-type': 'text/plain; charset=utf-8' });

// ─── paths ─────────────────────────────────────────────────────────────────────────────────

type Target =
  | { kind: 'root' }
  | { kind: 'principal' }
  | { kind: 'home' }
  | { kind: 'collection'; segment: string }
  | { kind: 'object'; segment: string; name: string };

const enc = encodeURIComponent;
const rootHref = () => `${DAV_ROOT}/`;
const principalHref = (userId: string) => `${DAV_ROOT}/principals/${userId}/`;
const homeHref = (userId: string) => `${DAV_ROOT}/calendars/${userId}/`;
const collectionHref = (userId: string, segment: string) => `${homeHref(userId)}${enc(segment)}/`;
const objectHref = (userId: string, segment: string, name: string) => `${collectionHref(userId, segment)}${enc(name)}`;

/** The resource a path names (percent-decoded); another user's paths are not found. */
function targetOf(path: string, userId: string): Target {
  let rest = path.split('?')[0]!;
  if (/^[a-z]+:\/\//i.test(rest)) rest = new URL(rest).pathname;
  if (!rest.startsWith(DAV_ROOT)) throw notFound();
  let segments: string[];
  try {
    segments = rest.slice(DAV_ROOT.length).split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw badRequest('the path is not valid percent-encoding');
  }
  if (segments.length === 0) return { kind: 'root' };
  const [area, owner, segment, name, ...more] = segments;
  if ((area !== 'principals' && area !== 'calendars') || !owner || more.length > 0) throw notFound();
  if (owner.toLowerCase() !== userId.toLowerCase()) throw notFound();
  if (area === 'principals') {
    if (segment) throw notFound();
    return { kind: 'principal' };
  }
  if (!segment) return { kind: 'home' };
  if (!name) return { kind: 'collection', segment };
  return { kind: 'object', segment, name };
}

// ─── the request ───────────────────────────────────────────────────────────────────────────

interface Req {
  ctx: Ctx;
  dav: DavRequest;
  userId: string;
  email: string;
  readOnly: boolean;
  zone: string;
  header(name: string): string | undefined;
}

export async function handleDav(ctx: Ctx, dav: DavRequest): Promise<DavReply> {
  try {
    if (!dav.user.secondFactorOk) throw davError(403, [D('need-privileges')], 'set up a second factor in the app first');
    if (dav.user.readOnly && !DAV_READ_METHODS.includes(dav.method)) throw davError(403, [D('need-privileges')], 'this app password is read-only');
    const profile = await ensureProfile(ctx.pool, dav.user.id);
    const req: Req = {
      ctx,
      dav,
      userId: dav.user.id,
      email: dav.user.email,
      readOnly: dav.user.readOnly,
      zone: profile.timezone,
      header: (name) => dav.headers[name],
    };
    const target = targetOf(dav.path, req.userId);
    switch (dav.method) {
      case 'OPTIONS':
        return { status: 200, headers: { dav: DAV_HEADER, allow: ALLOW, 'content-length': '0' }, body: '' };
      case 'PROPFIND':
        return await propfind(req, target);
      case 'REPORT':
        return await report(req, target);
      case 'GET':
      case 'HEAD':
        return await get(req, target);
      case 'PUT':
        return await put(req, target);
      case 'DELETE':
        return await remove(req, target);
      case 'MKCALENDAR':
      case 'MKCOL':
        return await mkcalendar(req, target);
      case 'PROPPATCH':
        return await proppatch(req, target);
      case 'MOVE':
        return await move(req, target);
    }
  } catch (err) {
    if (err instanceof DavStatus) return { status: err.status, headers: err.headers, body: err.body };
    if (err instanceof XmlError) return { status: 400, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: `${err.message}\n` };
    if (err instanceof AppError && err.status < 500) {
      return toReply(davError(err.status === 404 ? 404 : err.status === 409 ? 409 : 403, [], err.message));
    }
    throw err;
  }
}

const toReply = (s: DavStatus): DavReply => ({ status: s.status, headers: s.headers, body: s.body });

// ─── resources and their properties ────────────────────────────────────────────────────────

/** A member rendered: its text and ETag (a digest of the text: strong, and new with every visible change). */
interface Rendered {
  href: string;
  member: Member;
  vtodo: ICAL.Component;
  ics: string;
  etag: string;
}

function render(req: Req, coll: Collection, m: Member): Rendered {
  const vtodo = taskToVtodo(m.task, { timezone: req.zone, uid: m.object?.uid ?? null, topicTitle: coll.topicId ? coll.title : null, parentUid: m.parentUid, kept: m.object?.kept ?? null });
  const ics = vtodoCalendar([vtodo]);
  return { href: objectHref(req.userId, coll.segment, m.object?.name ?? `${m.task.id}.ics`), member: m, vtodo, ics, etag: etagOf(ics) };
}

export const etagOf = (ics: string) => `"${createHash('sha256').update(ics).digest('base64url').slice(0, 27)}"`;

type PropValue = (w: XmlWriter) => (Element | string)[] | Element | string | null;

/** Properties every collection-like resource answers. */
function commonProps(req: Req): Record<string, PropValue> {
  return {
    [D('current-user-principal')]: (w) => w.el(D('href'), principalHref(req.userId)),
    [D('principal-URL')]: (w) => w.el(D('href'), principalHref(req.userId)),
    [D('owner')]: (w) => w.el(D('href'), principalHref(req.userId)),
    [D('current-user-privilege-set')]: (w) => privileges(w, req.readOnly),
    [D('supported-report-set')]: (w) => [C('calendar-query'), C('calendar-multiget'), D('sync-collection')].map((r) => w.el(D('supported-report'), w.el(D('report'), w.el(r)))),
  };
}

function privileges(w: XmlWriter, readOnly: boolean): Element[] {
  const names = readOnly ? ['read', 'read-current-user-privilege-set'] : ['read', 'read-current-user-privilege-set', 'write', 'write-content', 'write-properties', 'bind', 'unbind', 'all'];
  return names.map((n) => w.el(D('privilege'), w.el(n === 'read-current-user-privilege-set' ? D(n) : D(n))));
}

function rootProps(req: Req): Record<string, PropValue> {
  return { ...commonProps(req), [D('resourcetype')]: (w) => w.el(D('collection')), [D('displayname')]: () => 'Task Service' };
}

function principalProps(req: Req): Record<string, PropValue> {
  return {
    ...commonProps(req),
    [D('resourcetype')]: (w) => [w.el(D('collection')), w.el(D('principal'))],
    [D('displayname')]: () => req.email || req.userId,
    [C('calendar-home-set')]: (w) => w.el(D('href'), homeHref(req.userId)),
    [C('calendar-user-address-set')]: (w) => (req.email ? w.el(D('href'), `mailto:${req.email}`) : null),
    [C('calendar-user-type')]: () => 'INDIVIDUAL',
  };
}

function homeProps(req: Req): Record<string, PropValue> {
  return { ...commonProps(req), [D('resourcetype')]: (w) => w.el(D('collection')), [D('displayname')]: () => 'Task Service' };
}

function collectionProps(req: Req, coll: Collection, token: () => string): Record<string, PropValue> {
  return {
    ...commonProps(req),
    [D('resourcetype')]: (w) => [w.el(D('collection')), w.el(C('calendar'))],
    [D('displayname')]: () => coll.title,
    [C('calendar-description')]: () => coll.description ?? null,
    [A('calendar-color')]: () => coll.color ?? null,
    [A('calendar-order')]: () => String(coll.sortOrder + 2),
    [C('supported-calendar-component-set')]: (w) => { const comp = w.el(C('comp')); comp.setAttribute('name', 'VTODO'); return comp; },
    [C('supported-calendar-data')]: (w) => { const t = w.el(C('calendar-data')); t.setAttribute('content-type', 'text/calendar'); t.setAttribute('version', '2.0'); return t; },
    [C('max-resource-size')]: () => String(256 * 1024),
    [CS('getctag')]: () => token(),
    [D('sync-token')]: () => token(),
    [D('getcontenttype')]: () => 'text/calendar; charset=utf-8',
  };
}

function objectProps(r: Rendered): Record<string, PropValue> {
  return {
    [D('resourcetype')]: () => [],
    [D('getetag')]: () => r.etag,
    [D('getcontenttype')]: () => ICS,
    [D('getcontentlength')]: () => String(Buffer.byteLength(r.ics)),
    [D('getlastmodified')]: () => new Date(r.member.task.updatedAt).toUTCString(),
    [C('calendar-data')]: () => r.ics,
    [D('displayname')]: () => r.member.task.title,
  };
}

/** What a PROPFIND or REPORT asks for: named properties, all (allprop) or the names only. */
type PropRequest = { kind: 'prop'; names: string[] } | { kind: 'allprop' } | { kind: 'propname' };

function propRequestOf(el: Element | undefined): PropRequest {
  if (!el) return { kind: 'allprop' };
  const prop = child(el, D('prop'));
  if (prop) return { kind: 'prop', names: children(prop).map(nameOf) };
  if (child(el, D('propname'))) return { kind: 'propname' };
  return { kind: 'allprop' };
}

/** allprop leaves out what is costly or large (RFC 4918 §9.1: live properties a server need not list). */
const NOT_IN_ALLPROP = new Set([C('calendar-data'), D('current-user-privilege-set'), D('supported-report-set')]);

/** One `response` element: found properties under 200, unknown ones under 404. */
function response(w: XmlWriter, href: string, props: Record<string, PropValue>, asked: PropRequest): Element {
  const found: Element[] = [];
  const missing: Element[] = [];
  const names = asked.kind === 'prop' ? asked.names : Object.keys(props).filter((n) => asked.kind === 'propname' || !NOT_IN_ALLPROP.has(n));
  for (const name of names) {
    const get = props[name];
    const value = get && asked.kind !== 'propname' ? get(w) : get ? [] : null;
    if (value === null) {
      missing.push(w.bare(name));
      continue;
    }
    const e = w.el(name);
    for (const v of Array.isArray(value) ? value : [value]) e.appendChild(typeof v === 'string' ? w.doc.createTextNode(v) : v);
    found.push(e);
  }
  const propstat = (els: Element[], status: string) => w.el(D('propstat'), w.el(D('prop'), ...els), w.el(D('status'), status));
  return w.el(D('response'), w.el(D('href'), href), found.length ? propstat(found, 'HTTP/1.1 200 OK') : null, missing.length ? propstat(missing, 'HTTP/1.1 404 Not Found') : null);
}

const multistatus = (body: string, next?: string): DavReply => ({ status: 207, headers: { 'content-type': XML }, body, ...(next ? { next } : {}) });

function depthOf(req: Req): '0' | '1' {
  const d = (req.header('depth') ?? 'infinity').toLowerCase();
  return d === '0' ? '0' : '1';
}

function bodyXml(req: Req): Element | undefined {
  const text = req.dav.body?.trim();
  return text ? parseXml(text) : undefined;
}

async function collectionOrNotFound(req: Req, segment: string): Promise<Collection> {
  const coll = await collectionBySegment(req.ctx.pool, req.userId, segment);
  if (!coll) throw notFound();
  return coll;
}

// ─── cursors of paged replies ──────────────────────────────────────────────────────────────

interface Cursor {
  /** the last member id (members in id order) or href index (multiget) answered */
  after: string | number;
  /** sync-collection: the token being built, and the one asked from */
  token?: string;
  since?: string | null;
}

const writeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');
function readCursor(req: Req): Cursor | null {
  if (!req.dav.cursor) return null;
  try {
    return JSON.parse(Buffer.from(req.dav.cursor, 'base64url').toString()) as Cursor;
  } catch {
    throw badRequest('bad continuation');
  }
}

// ─── PROPFIND ──────────────────────────────────────────────────────────────────────────────

async function propfind(req: Req, target: Target): Promise<DavReply> {
  const root = bodyXml(req);
  if (root && nameOf(root) !== D('propfind')) throw badRequest('PROPFIND takes a DAV:propfind body');
  const asked = propRequestOf(root);
  const depth = depthOf(req);
  const cursor = readCursor(req);
  const pool = req.ctx.pool;
  if (target.kind === 'collection' || target.kind === 'object') {
    const coll = await collectionOrNotFound(req, target.segment);
    if (target.kind === 'object') {
      const r = await memberAt(req, coll, target.name);
      if (!r) throw notFound();
      return multistatus(multistatusPage((w) => [response(w, r.href, objectProps(r), asked)], { first: true, last: true }));
    }
    const token = cursor ? '' : tokenOf(await syncXid(pool, req.userId, coll.topicId));
    if (depth === '0') return multistatus(multistatusPage((w) => [response(w, collectionHref(req.userId, coll.segment), collectionProps(req, coll, () => token), asked)], { first: true, last: true }));
    const page = await collectionMembers(pool, req.userId, coll.topicId, { afterId: cursor ? String(cursor.after) : null, limit: PAGE });
    const more = page.length === PAGE;
    const body = multistatusPage(
      (w) => [
        ...(cursor ? [] : [response(w, collectionHref(req.userId, coll.segment), collectionProps(req, coll, () => token), asked)]),
        ...page.map((m) => { const r = render(req, coll, m); return response(w, r.href, objectProps(r), asked); }),
      ],
      { first: !cursor, last: !more },
    );
    return multistatus(body, more ? writeCursor({ after: page.at(-1)!.task.id }) : undefined);
  }
  if (target.kind === 'home') {
    const colls = depth === '1' ? await listCollections(pool, req.userId) : [];
    const tokens = await Promise.all(colls.map((c) => syncXid(pool, req.userId, c.topicId)));
    return multistatus(
      multistatusPage(
        (w) => [response(w, homeHref(req.userId), homeProps(req), asked), ...colls.map((c, i) => response(w, collectionHref(req.userId, c.segment), collectionProps(req, c, () => tokenOf(tokens[i]!)), asked))],
        { first: true, last: true },
      ),
    );
  }
  if (target.kind === 'principal') return multistatus(multistatusPage((w) => [response(w, principalHref(req.userId), principalProps(req), asked)], { first: true, last: true }));
  return multistatus(
    multistatusPage((w) => [response(w, rootHref(), rootProps(req), asked), ...(depth === '1' ? [response(w, principalHref(req.userId), principalProps(req), asked)] : [])], { first: true, last: true }),
  );
}

/** The member at `name` in `coll` (null: none there). */
async function memberAt(req: Req, coll: Collection, name: string, q: Queryable = req.ctx.pool): Promise<Rendered | null> {
  const id = await taskIdByName(q, req.userId, name);
  if (!id) return null;
  const [m] = await membersByIds(q, req.userId, [id]);
  if (!m || m.task.topicId !== coll.topicId) return null;
  return render(req, coll, m);
}

// ─── sync tokens ───────────────────────────────────────────────────────────────────────────

/**
 * A sync token: the sync position changes are counted from (db/caldav.ts syncState: the newest
 * change + 1, and the transactions below it still in flight then, `<base>-<xid>…`), and the day it
 * was made (days since 1970, UTC) so that a token older than the tombstones can be told apart. The
 * day keeps the token (and the ctag) the same while nothing changes, except once at midnight UTC.
 */
const tokenOf = (pos: string, at = new Date()) => `${TOKEN_PREFIX}${pos}.${Math.floor(at.getTime() / 86_400_000)}`;

const posOf = (text: string): SyncPos => {
  const [base, ...pending] = text.split('-');
  return { base: base!, pending };
};

/** The position a client's token counts from; a token that is malformed, beyond the ids handed out or older than the tombstones is invalid. */
function sinceOf(token: string, next: string): SyncPos {
  const m = /^urn:tasksvc:sync:(\d{1,20}(?:-\d{1,20}){0,16})\.(\d{1,6})$/.exec(token.trim());
  const invalid = () => davError(403, [D('valid-sync-token')], 'the sync token is unknown or has expired: sync again from the start');
  if (!m) throw invalid();
  const pos = posOf(m[1]!);
  const ageDays = Math.floor(Date.now() / 86_400_000) - Number(m[2]);
  if (ageDays > CALDAV_TOMBSTONE_DAYS - 2 || ageDays < 0 || [pos.base, ...pos.pending].some((x) => BigInt(x) > BigInt(next))) throw invalid();
  return pos;
}

// ─── REPORT ────────────────────────────────────────────────────────────────────────────────

async function report(req: Req, target: Target): Promise<DavReply> {
  const root = bodyXml(req);
  if (!root) throw badRequest('REPORT needs a body');
  const kind = nameOf(root);
  if (target.kind !== 'collection' && target.kind !== 'object') {
    throw davError(403, [D('supported-report')], `${kind} is answered on a calendar collection`);
  }
  const coll = await collectionOrNotFound(req, target.segment);
  const asked = propRequestOf(root);
  if (kind === C('calendar-multiget')) return multiget(req, coll, root, asked);
  if (kind === C('calendar-query')) return calendarQuery(req, coll, target, root, asked);
  if (kind === D('sync-collection')) return syncCollection(req, coll, root, asked);
  throw davError(403, [D('supported-report')], `the report ${kind} is not supported`);
}

async function multiget(req: Req, coll: Collection, root: Element, asked: PropRequest): Promise<DavReply> {
  const hrefs = children(root, D('href')).map(textOf);
  const cursor = readCursor(req);
  const from = cursor ? Number(cursor.after) : 0;
  const slice = hrefs.slice(from, from + PAGE);
  const nameOfHref = (href: string): string | null => {
    try {
      const t = targetOf(href, req.userId);
      return t.kind === 'object' && t.segment === coll.segment ? t.name : null;
    } catch {
      return null;
    }
  };
  const names = slice.map(nameOfHref);
  // one statement for the page, however many hrefs it names
  const members = await membersByNames(req.ctx.pool, req.userId, coll.topicId, [...new Set(names.filter((n): n is string => n !== null))]);
  const more = from + PAGE < hrefs.length;
  const body = multistatusPage(
    (w) =>
      slice.map((href, i) => {
        const m = names[i] === null ? undefined : members.get(names[i]!);
        if (!m) return w.el(D('response'), w.el(D('href'), href), w.el(D('status'), 'HTTP/1.1 404 Not Found'));
        const r = render(req, coll, m);
        return response(w, r.href, objectProps(r), asked);
      }),
    { first: !cursor, last: !more },
  );
  return multistatus(body, more ? writeCursor({ after: from + PAGE }) : undefined);
}

async function syncCollection(req: Req, coll: Collection, root: Element, asked: PropRequest): Promise<DavReply> {
  const level = textOf(child(root, D('sync-level'))) || '1';
  if (level !== '1' && level !== 'infinite' && level !== 'infinity') throw badRequest('sync-level must be 1');
  const cursor = readCursor(req);
  const pool = req.ctx.pool;
  let token: string;
  let since: SyncPos | null;
  if (cursor?.token) {
    token = cursor.token;
    since = cursor.since ? posOf(cursor.since) : null;
  } else {
    const state = await syncState(pool, req.userId, coll.topicId);
    token = posText(state.pos);
    const given = textOf(child(root, D('sync-token')));
    since = given ? sinceOf(given, state.next) : null;
  }
  const page = await collectionMembers(pool, req.userId, coll.topicId, { afterId: cursor ? String(cursor.after) : null, since, limit: PAGE });
  const more = page.length === PAGE;
  const removed = !more && since ? await removedSince(pool, req.userId, coll.topicId, since) : [];
  // Nothing changed since the client's position: it stays the client's token (a transaction in
  // flight then, that has ended without touching the collection, does not change the token).
  if (!cursor && since && page.length === 0 && removed.length === 0) token = posText(since);
  const body = multistatusPage(
    (w) => [
      ...page.map((m) => { const r = render(req, coll, m); return response(w, r.href, objectProps(r), asked); }),
      ...removed.map((name) => w.el(D('response'), w.el(D('href'), objectHref(req.userId, coll.segment, name)), w.el(D('status'), 'HTTP/1.1 404 Not Found'))),
    ],
    { first: !cursor, last: !more, after: (w) => [w.el(D('sync-token'), tokenOf(token))] },
  );
  return multistatus(body, more ? writeCursor({ after: page.at(-1)!.task.id, token, since: since ? posText(since) : null }) : undefined);
}

async function calendarQuery(req: Req, coll: Collection, target: Target, root: Element, asked: PropRequest): Promise<DavReply> {
  const filter = child(root, C('filter'));
  const top = child(filter, C('comp-filter'));
  if (!filter || !top || top.getAttribute('name')?.toUpperCase() !== 'VCALENDAR') throw davError(403, [C('valid-filter')], 'the filter must start with a VCALENDAR comp-filter');
  const cursor = readCursor(req);
  let page: Member[];
  if (target.kind === 'object') {
    const id = await taskIdByName(req.ctx.pool, req.userId, target.name);
    page = id ? (await membersByIds(req.ctx.pool, req.userId, [id])).filter((m) => m.task.topicId === coll.topicId) : [];
  } else {
    page = await collectionMembers(req.ctx.pool, req.userId, coll.topicId, { afterId: cursor ? String(cursor.after) : null, limit: PAGE });
  }
  const more = target.kind === 'collection' && page.length === PAGE;
  const matching = page.map((m) => render(req, coll, m)).filter((r) => matchesCalendar(top, r.vtodo, req.zone));
  const body = multistatusPage((w) => matching.map((r) => response(w, r.href, objectProps(r), asked)), { first: !cursor, last: !more });
  return multistatus(body, more ? writeCursor({ after: page.at(-1)!.task.id }) : undefined);
}

// ─── calendar-query filters (RFC 4791 §9.7) ────────────────────────────────────────────────

/** The VCALENDAR comp-filter against a calendar holding one VTODO (and the VTIMEZONE it may name). */
function matchesCalendar(filter: Element, vtodo: ICAL.Component, zone: string): boolean {
  if (child(filter, C('is-not-defined'))) return false;
  for (const f of children(filter, C('comp-filter'))) {
    const name = (f.getAttribute('name') ?? '').toUpperCase();
    const present = name === 'VTODO' ? [vtodo] : [];
    if (child(f, C('is-not-defined'))) {
      if (present.length > 0) return false;
    } else if (!present.some((c) => matchesComponent(f, c, zone))) return false;
  }
  return children(filter, C('prop-filter')).length === 0;
}

function matchesComponent(filter: Element, comp: ICAL.Component, zone: string): boolean {
  const range = child(filter, C('time-range'));
  if (range && !todoInRange(comp, range, zone)) return false;
  for (const pf of children(filter, C('prop-filter'))) if (!matchesProp(pf, comp)) return false;
  for (const cf of children(filter, C('comp-filter'))) {
    const subs = comp.getAllSubcomponents((cf.getAttribute('name') ?? '').toLowerCase());
    if (child(cf, C('is-not-defined'))) {
      if (subs.length > 0) return false;
    } else if (!subs.some((s) => matchesComponent(cf, s, zone))) return false;
  }
  return true;
}

function matchesProp(filter: Element, comp: ICAL.Component): boolean {
  const props = comp.getAllProperties((filter.getAttribute('name') ?? '').toLowerCase());
  if (child(filter, C('is-not-defined'))) return props.length === 0;
  if (props.length === 0) return false;
  const match = child(filter, C('text-match'));
  if (!match) return true;
  const negate = match.getAttribute('negate-condition') === 'yes';
  const octet = match.getAttribute('collation') === 'i;octet';
  const needle = octet ? textOf(match) : textOf(match).toLowerCase();
  const hit = props.some((p) => p.getValues().some((v) => (octet ? String(v) : String(v).toLowerCase()).includes(needle)));
  return hit !== negate;
}

/** UTC date-time of a time-range attribute (yyyymmddThhmmssZ). */
function rangeTime(value: string | null, fallback: number): number {
  if (!value) return fallback;
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) throw davError(403, [C('valid-filter')], `time-range ${value} is not a UTC date-time`);
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

/** RFC 4791 §9.9 for VTODO; a repeating task's occurrences run on from its DUE without end. */
function todoInRange(comp: ICAL.Component, range: Element, zone: string): boolean {
  const start = rangeTime(range.getAttribute('start'), -Infinity);
  const end = rangeTime(range.getAttribute('end'), Infinity);
  const at = (name: string): number | null => {
    const v = comp.getFirstPropertyValue(name);
    if (!(v instanceof ICAL.Time)) return null;
    if (v.isDate) return startOfLocalDay(`${String(v.year).padStart(4, '0')}-${String(v.month).padStart(2, '0')}-${String(v.day).padStart(2, '0')}`, zone).getTime();
    return v.toJSDate().getTime();
  };
  const dtstart = at('dtstart');
  const due = at('due');
  const completed = at('completed');
  const created = at('created');
  if (comp.getFirstProperty('rrule') && due !== null) return end > due;
  if (dtstart !== null && due !== null) return (start < due || start <= dtstart) && (end > dtstart || end >= due);
  if (dtstart !== null) return start <= dtstart && end > dtstart;
  if (due !== null) return start < due && end >= due;
  if (completed !== null && created !== null) return (start <= created || start <= completed) && (end >= created || end >= completed);
  if (completed !== null) return start <= completed && end >= completed;
  if (created !== null) return end > created;
  return true;
}

// ─── GET ───────────────────────────────────────────────────────────────────────────────────

async function get(req: Req, target: Target): Promise<DavReply> {
  if (target.kind !== 'object') {
    return { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', dav: DAV_HEADER }, body: 'This is a CalDAV server for tasks: connect a CalDAV client to it (Settings → Connect an app).\n' };
  }
  const coll = await collectionOrNotFound(req, target.segment);
  const r = await memberAt(req, coll, target.name);
  if (!r) throw notFound();
  if (req.header('if-none-match')?.split(',').map((s) => s.trim()).includes(r.etag)) return { status: 304, headers: { etag: r.etag }, body: '' };
  return { status: 200, headers: { 'content-type': ICS, etag: r.etag, 'last-modified': new Date(r.member.task.updatedAt).toUTCString() }, body: req.dav.method === 'HEAD' ? '' : r.ics };
}

// ─── writes ────────────────────────────────────────────────────────────────────────────────

/** If-Match / If-None-Match against the resource as it is (null: it does not exist). RFC 7232: 412 when they fail. */
function checkPreconditions(req: Req, etag: string | null): void {
  const ifMatch = req.header('if-match');
  const ifNoneMatch = req.header('if-none-match');
  const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);
  const failed = () => davError(412, [], etag ? 'the task changed meanwhile: sync and try again' : 'the task does not exist (any more)');
  if (ifMatch !== undefined) {
    const tags = list(ifMatch);
    if (etag === null || !(tags.includes('*') || tags.includes(etag))) throw failed();
  }
  if (ifNoneMatch !== undefined && etag !== null) {
    const tags = list(ifNoneMatch);
    if (tags.includes('*') || tags.includes(etag)) throw davError(412, [], 'a task with this name exists already');
  }
}

interface Who {
  userId: string;
  today: string;
  now: Date;
}

/** A write in one transaction, "today" in the user's zone; events leave once it commits. */
async function write<T>(req: Req, fn: (c: PoolClient, who: Who) => Promise<T>): Promise<T> {
  const result = await inTransaction(req.ctx.pool, async (c) => {
    const now = new Date();
    return fn(c, { userId: req.userId, today: localDate(now, req.zone), now });
  });
  req.ctx.relay.kick();
  return result;
}

/** The member at a name, locked for this transaction (null: none). */
async function lockedMember(c: PoolClient, req: Req, coll: Collection, name: string): Promise<Rendered | null> {
  const id = await taskIdByName(c, req.userId, name);
  if (!id || !(await lockTask(c, req.userId, id))) return null;
  return memberAt(req, coll, name, c);
}

function refuseFatal(issues: { property: string; message: string; fatal: boolean }[], notTodo?: boolean): never {
  const fatal = issues.filter((i) => i.fatal);
  const message = fatal.map((i) => `${i.property}: ${i.message}`).join('; ');
  if (notTodo) throw davError(403, [C('supported-calendar-component')], message);
  if (fatal.some((i) => i.property === 'VCALENDAR')) throw davError(403, [C('valid-calendar-data')], message);
  throw davError(403, [C('valid-calendar-object-resource')], message);
}

/** The REST create body a VTODO describes, in a collection. */
function createBody(t: VtodoTask, coll: Collection): CreateTaskBody {
  return {
    title: t.title,
    notes: t.notes,
    type: t.type,
    priority: t.priority,
    topicId: coll.topicId,
    dueDate: t.dueDate,
    ...(t.dueTime !== null && t.dueDate !== null ? { dueTime: t.dueTime } : {}),
    ...(t.reminders.length > 0 ? { reminders: t.reminders } : {}),
    coinValue: t.coinValue ?? 1,
    ...(t.estimatedMinutes !== null ? { estimatedMinutes: t.estimatedMinutes } : {}),
    ...(t.energyLevel !== null ? { energyLevel: t.energyLevel } : {}),
    ...ruleFields(t),
  };
}

function ruleFields(t: VtodoTask) {
  const r = t.schedule?.rule;
  return {
    recurrenceType: r?.type ?? null,
    recurrenceInterval: r ? r.interval : null,
    recurrenceWeekdays: r && r.weekdays.length ? [...r.weekdays].sort() : null,
    recurrenceWeekOfMonth: (r?.weekOfMonth ?? null) as 1 | 2 | 3 | 4 | -1 | null,
    recurrenceFixed: r?.fixed ?? false,
  };
}

/**
 * The parent a VTODO's RELATED-TO names, where the app can hold it: a task of the same calendar
 * (a subtask is in its parent's topic) that is not itself a subtask, for a task that does not
 * repeat. Otherwise null, and the link is kept as the client wrote it.
 */
async function parentOf(c: PoolClient, req: Req, coll: Collection, t: VtodoTask, self: string | null): Promise<string | null> {
  if (!t.parentUid || t.type === 'RECURRING') return null;
  const id = await taskIdByUid(c, req.userId, t.parentUid);
  if (!id || id === self) return null;
  const parent = await getTask(c, req.userId, id, '1970-01-01');
  return parent && !parent.parentId && parent.type !== 'RECURRING' && parent.topicId === coll.topicId ? parent.id : null;
}

/** The schedule a VTODO names, as the task's columns (its anchor may lie before its due date: "the 31st" due on Feb 28). */
const scheduleColumns = (t: VtodoTask) => (t.schedule ? { recurrenceAnchor: t.schedule.anchor, nextDueDate: t.schedule.nextDueDate } : {});

async function put(req: Req, target: Target): Promise<DavReply> {
  if (target.kind !== 'object') throw new DavStatus(405, '', { allow: 'OPTIONS, PROPFIND, PROPPATCH, REPORT, DELETE, MKCALENDAR, MOVE' });
  const type = req.header('content-type');
  if (type && !/^text\/calendar\b/i.test(type)) throw davError(415, [C('supported-calendar-data')], 'a task is sent as text/calendar');
  const coll = await collectionOrNotFound(req, target.segment);
  const read = parseCalendarObject(req.dav.body ?? '', { timezone: req.zone });
  if (!read.ok) refuseFatal(read.issues, read.notTodo);
  const incoming = read.task;
  const categories = keepCategories(incoming.kept, incoming.categories, coll.topicId ? coll.title : null);
  const created = await write(req, async (c, who) => {
    const existing = await lockedMember(c, req, coll, target.name);
    const parentId = await parentOf(c, req, coll, incoming, existing?.member.task.id ?? null);
    const kept = parentId === null && incoming.parentUid ? keepParentLink(categories, incoming.parentUid) : categories;
    // a name taken in another collection is not this resource
    if (!existing && (await taskIdByName(c, req.userId, target.name))) throw davError(409, [], 'this name is taken by a task in another calendar');
    checkPreconditions(req, existing?.etag ?? null);
    const holder = await taskIdByUid(c, req.userId, incoming.uid);
    if (holder && holder !== existing?.member.task.id) {
      throw davError(403, [C('no-uid-conflict')], 'another task has this UID already', (w) => [w.el(D('href'), `${DAV_ROOT}/`)]);
    }
    if (!existing) {
      if (incoming.status === 'cancelled') return true; // cancelled = deleted: nothing to keep
      const row = await createIn(c, who, req.zone, { ...createBody(incoming, coll), parentId }, scheduleColumns(incoming));
      await saveObject(c, { taskId: row.id, userId: req.userId, name: target.name, uid: incoming.uid, kept });
      if (incoming.status === 'completed') await completeIn(c, who, (await getTask(c, req.userId, row.id, who.today))!, { awardCoins: true });
      return true;
    }
    const current = existing.member;
    if (existing.member.object?.uid && existing.member.object.uid !== incoming.uid) throw davError(403, [C('no-uid-conflict')], 'a resource keeps its UID');
    if (!current.object && incoming.uid !== taskUid(current.task.id) && holder === null) {
      // a task made elsewhere, now named by a client: its UID is ours, and stays
      throw davError(403, [C('no-uid-conflict')], `this task's UID is ${taskUid(current.task.id)}`);
    }
    if (incoming.status === 'cancelled') {
      await removeIn(c, req.userId, current.task.id);
      return false;
    }
    await applyChanges(c, who, current, incoming, parentId);
    const before = JSON.stringify(current.object?.kept ?? null);
    await saveObject(c, { taskId: current.task.id, userId: req.userId, name: target.name, uid: incoming.uid, kept });
    // what only a client sees changed: its etag and the next sync must show it
    if (before !== JSON.stringify(kept)) await updateTask(c, req.userId, current.task.id, {}, who.today);
    return false;
  });
  return { status: created ? 201 : 204, headers: {}, body: '' };
}

/**
 * Bring a task to what a client PUT, through the REST handlers' own functions: fields → updateIn
 * (task.updated), a completion → completeIn (coins, streaks, task.completed), a reopening →
 * undoCompleteIn. A repeating task a client completed is advanced; so is one whose DUE the client
 * moved to the schedule's next date itself (that is how some clients complete a repeating task).
 */
async function applyChanges(c: PoolClient, who: Who, current: Member, t: VtodoTask, parentId: string | null): Promise<void> {
  const task = current.task;
  const row = async () => (await getTask(c, who.userId, task.id, who.today))!;
  const body: UpdateTaskBody = {};
  if (parentId !== task.parentId) body.parentId = parentId;
  if (t.dueTime !== task.dueTime && t.dueDate !== null) body.dueTime = t.dueTime;
  if (!sameReminders(t.reminders, task.reminders)) body.reminders = t.reminders;
  if (t.title !== task.title) body.title = t.title;
  if ((t.notes ?? null) !== task.notes) body.notes = t.notes;
  if (t.priority !== task.priority) body.priority = t.priority;
  if (t.estimatedMinutes !== null && t.estimatedMinutes !== task.estimatedMinutes) body.estimatedMinutes = t.estimatedMinutes;
  if (t.energyLevel !== null && t.energyLevel !== task.energyLevel) body.energyLevel = t.energyLevel;
  if (t.coinValue !== null && t.coinValue !== task.coinValue) body.coinValue = t.coinValue;
  let completeRepeat = false;
  const rule = ruleOf(task);
  if (t.type !== task.type) {
    body.type = t.type;
    Object.assign(body, ruleFields(t), { dueDate: t.dueDate });
  } else if (task.type === 'RECURRING' && t.schedule && rule) {
    const same = JSON.stringify(ruleFields(t)) === JSON.stringify({ ...ruleFields({ ...t, schedule: { ...t.schedule, rule: { ...rule } } }) });
    const next = task.nextDueDate!;
    const anchor = task.recurrenceAnchor ?? next;
    const advanced = [occurrenceAfter(rule, anchor, next), advanceOnCompletion(rule, { anchor, nextDueDate: next }, who.today).nextDueDate];
    if (!same) Object.assign(body, ruleFields(t), { dueDate: t.dueDate });
    else if (t.status === 'completed' || t.dueDate === null) completeRepeat = true;
    else if (t.schedule.nextDueDate !== next) {
      if (advanced.includes(t.schedule.nextDueDate)) completeRepeat = true;
      else body.dueDate = t.dueDate;
    }
  } else if (t.dueDate !== task.dueDate) body.dueDate = t.dueDate;
  let updated = Object.keys(body).length > 0 ? await updateIn(c, who, await row(), body) : null;
  if (t.schedule && body.recurrenceType !== undefined) {
    // the client's schedule may be anchored before its due date ("the 31st", due on Feb 28)
    updated = await updateTask(c, who.userId, task.id, scheduleColumns(t), who.today);
  }
  // a client cannot be asked whether a parent's open subtasks go with it: completing it completes them (docs/tasks.md)
  if (completeRepeat) {
    await completeIn(c, who, updated ?? (await row()), { awardCoins: true, completeSubtasks: true });
    return;
  }
  if (task.type === 'RECURRING') return;
  if (t.status === 'completed' && !task.completedAt) await completeIn(c, who, updated ?? (await row()), { awardCoins: true, completeSubtasks: true });
  else if (t.status === 'open' && task.completedAt) await undoCompleteIn(c, who, updated ?? (await row()));
}

async function remove(req: Req, target: Target): Promise<DavReply> {
  if (target.kind === 'collection') {
    const coll = await collectionOrNotFound(req, target.segment);
    if (coll.topicId === null) throw davError(403, [D('need-privileges')], 'the calendar of tasks without a topic cannot be deleted');
    checkPreconditions(req, null);
    const topicId = coll.topicId;
    await write(req, async (c, who) => {
      // as in the app: the topic goes, its tasks stay (in the calendar of tasks without a topic)
      for (const row of await detachTopic(c, req.userId, topicId, who.today)) await emitTaskEvent(c, 'task.updated', row);
      await deleteTopic(c, req.userId, topicId);
    });
    return { status: 204, headers: {}, body: '' };
  }
  if (target.kind !== 'object') throw new DavStatus(405, '', { allow: 'OPTIONS, PROPFIND, REPORT' });
  const coll = await collectionOrNotFound(req, target.segment);
  await write(req, async (c) => {
    const existing = await lockedMember(c, req, coll, target.name);
    if (!existing) throw notFound();
    checkPreconditions(req, existing.etag);
    await removeIn(c, req.userId, existing.member.task.id);
  });
  return { status: 204, headers: {}, body: '' };
}

const COLOR_RE = /^#([0-9A-Fa-f]{6})([0-9A-Fa-f]{2})?$/;

/** What a MKCALENDAR or PROPPATCH sets on a topic; unknown properties are refused by name. */
function topicProps(set: Element[]): { cols: { title?: string; color?: string | null; description?: string | null }; refused: string[]; components: string[] | null } {
  const cols: { title?: string; color?: string | null; description?: string | null } = {};
  const refused: string[] = [];
  let components: string[] | null = null;
  for (const prop of set.flatMap((s) => children(child(s, D('prop'))))) {
    const name = nameOf(prop);
    const value = textOf(prop);
    if (name === D('displayname')) {
      if (value.length < 1 || value.length > 100) refused.push(name);
      else cols.title = value;
    } else if (name === A('calendar-color')) {
      const m = COLOR_RE.exec(value);
      if (m) cols.color = `#${m[1]!.toLowerCase()}`;
      else if (!value) cols.color = null;
      else refused.push(name);
    } else if (name === C('calendar-description')) cols.description = value.slice(0, 5000) || null;
    else if (name === C('supported-calendar-component-set')) components = children(prop, C('comp')).map((c) => (c.getAttribute('name') ?? '').toUpperCase());
    else if (name === D('resourcetype') || name === A('calendar-order') || name === C('calendar-timezone')) continue; // MKCOL's own, and hints we do not store
    else refused.push(name);
  }
  return { cols, refused, components };
}

async function mkcalendar(req: Req, target: Target): Promise<DavReply> {
  if (target.kind !== 'collection') throw davError(403, [D('resource-must-be-null')], 'calendars are made in the calendar home');
  if (target.segment === INBOX || (await collectionBySegment(req.ctx.pool, req.userId, target.segment))) throw new DavStatus(405, '', { allow: ALLOW });
  if (target.segment.length > 200) throw davError(403, [], 'the calendar name is too long');
  const root = bodyXml(req);
  const { cols, refused, components } = topicProps(root ? children(root, D('set')) : []);
  if (components && !components.includes('VTODO')) throw davError(403, [C('supported-calendar-component')], 'this server keeps tasks only (VTODO)');
  if (refused.length > 0) throw davError(403, [], `cannot set ${refused.join(', ')}`);
  await insertTopic(req.ctx.pool, req.userId, { title: cols.title ?? target.segment.slice(0, 100), color: cols.color ?? null, description: cols.description ?? null, davName: target.segment });
  return { status: 201, headers: {}, body: '' };
}

async function proppatch(req: Req, target: Target): Promise<DavReply> {
  if (target.kind !== 'collection') throw davError(403, [D('cannot-modify-protected-property')], 'only calendars have properties to change');
  const coll = await collectionOrNotFound(req, target.segment);
  const root = bodyXml(req);
  if (!root || nameOf(root) !== D('propertyupdate')) throw badRequest('PROPPATCH takes a DAV:propertyupdate body');
  const sets = children(root, D('set'));
  const removes = children(root, D('remove'));
  const { cols, refused } = topicProps(sets);
  for (const r of removes) for (const p of children(child(r, D('prop')))) {
    if (nameOf(p) === A('calendar-color')) cols.color = null;
    else if (nameOf(p) === C('calendar-description')) cols.description = null;
    else refused.push(nameOf(p));
  }
  if (coll.topicId === null && Object.keys(cols).length > 0) refused.push(...Object.keys(cols).map((k) => (k === 'title' ? D('displayname') : k === 'color' ? A('calendar-color') : C('calendar-description'))));
  const all = [...sets, ...removes].flatMap((s) => children(child(s, D('prop'))));
  const ok = refused.length === 0;
  if (ok && coll.topicId && Object.keys(cols).length > 0) {
    const topicId = coll.topicId;
    await inTransaction(req.ctx.pool, async (c) => {
      await updateTopic(c, req.userId, topicId, cols);
    });
  }
  const body = multistatusPage(
    (w) => [
      w.el(
        D('response'),
        w.el(D('href'), collectionHref(req.userId, coll.segment)),
        ...all.map((p) => w.el(D('propstat'), w.el(D('prop'), w.bare(nameOf(p))), w.el(D('status'), ok ? 'HTTP/1.1 200 OK' : refused.includes(nameOf(p)) ? 'HTTP/1.1 403 Forbidden' : 'HTTP/1.1 424 Failed Dependency'))),
      ),
    ],
    { first: true, last: true },
  );
  return multistatus(body);
}

async function move(req: Req, target: Target): Promise<DavReply> {
  if (target.kind !== 'object') throw davError(403, [], 'only tasks can be moved');
  const destination = req.header('destination');
  if (!destination) throw badRequest('MOVE needs a Destination header');
  let dest: Target;
  try {
    dest = targetOf(destination, req.userId);
  } catch {
    throw davError(502, [], 'the destination is not on this server');
  }
  if (dest.kind !== 'object') throw davError(409, [], 'a task moves into a calendar');
  const from = await collectionOrNotFound(req, target.segment);
  const to = await collectionBySegment(req.ctx.pool, req.userId, dest.segment);
  if (!to) throw davError(409, [], 'the destination calendar does not exist');
  const overwrite = (req.header('overwrite') ?? 'T').toUpperCase() !== 'F';
  const replaced = await write(req, async (c, who) => {
    const existing = await lockedMember(c, req, from, target.name);
    if (!existing) throw notFound();
    checkPreconditions(req, existing.etag);
    const there = await lockedMember(c, req, to, dest.name);
    if (there && there.member.task.id === existing.member.task.id) return false;
    if (there && !overwrite) throw davError(412, [], 'a task with this name exists at the destination');
    if (there) await removeIn(c, req.userId, there.member.task.id);
    const m = existing.member;
    if (to.topicId !== from.topicId) await updateIn(c, who, (await getTask(c, req.userId, m.task.id, who.today))!, { topicId: to.topicId });
    const kept = (m.object?.kept) ?? { props: [], components: [] };
    if (dest.name !== (m.object?.name ?? `${m.task.id}.ics`) || !m.object) {
      await saveObject(c, { taskId: m.task.id, userId: req.userId, name: dest.name, uid: m.object?.uid ?? taskUid(m.task.id), kept });
    }
    return there !== null;
  });
  return { status: replaced ? 204 : 201, headers: {}, body: '' };
}
