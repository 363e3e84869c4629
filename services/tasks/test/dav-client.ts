import { DOMParser } from '@xmldom/xmldom';
import type { DavUser } from './caldav-system.ts';

/** A bare WebDAV client for the protocol tests: sends what a test says and reads multistatus answers (namespace-aware). */
export interface DavResponse {
  status: number;
  headers: Headers;
  text: string;
  /** multistatus: each response's href, status and found properties (Clark name → text) */
  responses: { href: string; status: string | null; props: Record<string, string>; missing: string[] }[];
  syncToken: string | null;
}

export function davClient(baseUrl: string, user: DavUser) {
  return async function dav(method: string, path: string, opts: { body?: string; headers?: Record<string, string>; auth?: string | null } = {}): Promise<DavResponse> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const auth = opts.auth === undefined ? user.basic : opts.auth;
    if (auth) headers.authorization = auth;
    if (opts.body && !headers['content-type']) headers['content-type'] = opts.body.startsWith('BEGIN:') ? 'text/calendar; charset=utf-8' : 'application/xml; charset=utf-8';
    const res = await fetch(`${baseUrl}${path}`, { method, headers, body: opts.body, redirect: 'manual' });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, ...readMultistatus(res.status === 207 ? text : '') };
  };
}

const clark = (el: { namespaceURI: string | null; localName: string | null }) => `{${el.namespaceURI ?? ''}}${el.localName}`;

function readMultistatus(text: string): Pick<DavResponse, 'responses' | 'syncToken'> {
  if (!text) return { responses: [], syncToken: null };
  const doc = new DOMParser().parseFromString(text, 'application/xml');
  const all = (parent: { getElementsByTagNameNS(ns: string, local: string): ArrayLike<any> }, ns: string, local: string) => Array.from(parent.getElementsByTagNameNS(ns, local)); // eslint-disable-line @typescript-eslint/no-explicit-any
  const responses = all(doc, 'DAV:', 'response').map((r) => {
    const props: Record<string, string> = {};
    const missing: string[] = [];
    for (const ps of all(r, 'DAV:', 'propstat')) {
      const ok = (all(ps, 'DAV:', 'status')[0]?.textContent ?? '').includes(' 200 ');
      const prop = all(ps, 'DAV:', 'prop')[0];
      for (let n = prop?.firstChild; n; n = n.nextSibling) {
        if (n.nodeType !== 1) continue;
        if (ok) props[clark(n)] = n.textContent ?? '';
        else missing.push(clark(n));
      }
    }
    const direct = Array.from(r.childNodes as ArrayLike<{ nodeType: number; localName: string; textContent: string }>).find((n) => n.nodeType === 1 && n.localName === 'status');
    return { href: all(r, 'DAV:', 'href')[0]?.textContent ?? '', status: direct?.textContent ?? null, props, missing };
  });
  const token = all(doc, 'DAV:', 'sync-token').find((e) => e.parentNode?.localName === 'multistatus');
  return { responses, syncToken: token?.textContent ?? null };
}

/** A VCALENDAR with one VTODO of these lines. */
export const ics = (...lines: string[]) => ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//dav test//EN', 'BEGIN:VTODO', 'DTSTAMP:20261101T000000Z', ...lines, 'END:VTODO', 'END:VCALENDAR', ''].join('\r\n');

export const propfind = (...props: string[]) =>
  `<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:cs="http://calendarserver.org/ns/" xmlns:a="http://apple.com/ns/ical/"><d:prop>${props.map((p) => `<${p}/>`).join('')}</d:prop></d:propfind>`;

export const syncCollection = (token: string | null, ...props: string[]) =>
  `<?xml version="1.0" encoding="utf-8"?><d:sync-collection xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:sync-token>${token ?? ''}</d:sync-token><d:sync-level>1</d:sync-level><d:prop>${props.map((p) => `<${p}/>`).join('')}</d:prop></d:sync-collection>`;
