import { DOMImplementation, DOMParser, XMLSerializer, type Document, type Element, type Node } from '@xmldom/xmldom';

/**
 * WebDAV/CalDAV XML (RFC 4918, 4791, 6578), read and written with @xmldom/xmldom: namespace-aware
 * parsing (clients spell prefixes as they like) and a DOM serialiser that escapes everything. Pure.
 * Elements are named in Clark notation: `{DAV:}getetag`.
 */

export const NS = {
  D: 'DAV:',
  C: 'urn:ietf:params:xml:ns:caldav',
  CS: 'http://calendarserver.org/ns/',
  A: 'http://apple.com/ns/ical/',
  /** ours: a human message in an error body */
  TS: 'urn:tasksvc:dav',
} as const;

const PREFIXES: Record<string, string> = { [NS.D]: 'd', [NS.C]: 'cal', [NS.CS]: 'cs', [NS.A]: 'ical', [NS.TS]: 'ts' };

export const clark = (ns: string | null, local: string) => `{${ns ?? ''}}${local}`;
export const nameOf = (el: Element) => clark(el.namespaceURI, el.localName ?? el.nodeName);

export class XmlError extends Error {}

/** Parse a request body. A DTD is refused (no client sends one; entities are a way to blow up a parser). */
export function parseXml(text: string): Element {
  if (/<!DOCTYPE/i.test(text)) throw new XmlError('DOCTYPE is not allowed');
  let doc: Document;
  try {
    doc = new DOMParser({ onError: (level, msg) => { if (level !== 'warning') throw new XmlError(msg); } }).parseFromString(text, 'application/xml');
  } catch (err) {
    throw new XmlError(`the body is not well-formed XML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!doc.documentElement) throw new XmlError('the body has no XML element');
  return doc.documentElement;
}

const ELEMENT_NODE = 1;

/** Element children, optionally only those named `name` (Clark notation). */
export function children(el: Element | null | undefined, name?: string): Element[] {
  const out: Element[] = [];
  if (!el) return out;
  for (let n: Node | null = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === ELEMENT_NODE && (!name || nameOf(n as Element) === name)) out.push(n as Element);
  }
  return out;
}

export const child = (el: Element | null | undefined, name: string): Element | undefined => children(el, name)[0];
export const textOf = (el: Element | null | undefined): string => (el?.textContent ?? '').trim();

/** Builds elements of one document; `el` takes children, text or nothing. */
export class XmlWriter {
  readonly doc: Document;
  readonly root: Element;
  constructor(rootName: string) {
    const [ns, local] = split(rootName);
    this.doc = new DOMImplementation().createDocument(ns, `${PREFIXES[ns] ?? 'x'}:${local}`, null);
    this.root = this.doc.documentElement!;
    for (const [uri, prefix] of Object.entries(PREFIXES)) if (uri !== ns) this.root.setAttributeNS('http://www.w3.org/2000/xmlns/', `xmlns:${prefix}`, uri);
  }

  el(name: string, ...content: (Element | string | number | null | undefined | false)[]): Element {
    const [ns, local] = split(name);
    const prefix = PREFIXES[ns];
    const e = prefix ? this.doc.createElementNS(ns, `${prefix}:${local}`) : this.doc.createElementNS(ns || null, local);
    for (const c of content) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(typeof c === 'string' || typeof c === 'number' ? this.doc.createTextNode(String(c)) : c);
    }
    return e;
  }

  /** An element as it came in a request (its name, and an empty body): for 404 propstats. */
  bare(name: string): Element {
    const [ns, local] = split(name);
    return ns === '' ? this.doc.createElementNS(null, local) : PREFIXES[ns] ? this.el(name) : this.doc.createElementNS(ns, `x:${local}`);
  }

  toString(): string {
    return `<?xml version="1.0" encoding="utf-8"?>\n${new XMLSerializer().serializeToString(this.doc)}`;
  }
}

function split(name: string): [string, string] {
  const m = /^\{([^}]*)\}(.+)$/.exec(name);
  if (!m) throw new Error(`not a Clark name: ${name}`);
  return [m[1]!, m[2]!];
}

/**
 * A multistatus written in pages (a large collection answers in several bus replies): the first
 * page opens the root element, the last closes it; a page's responses are serialised under a root
 * that declares every namespace, so none repeats them.
 */
export function multistatusPage(build: (w: XmlWriter) => Element[], part: { first: boolean; last: boolean; after?: (w: XmlWriter) => Element[] }): string {
  const w = new XmlWriter(clark(NS.D, 'multistatus'));
  for (const e of build(w)) w.root.appendChild(e);
  if (part.last && part.after) for (const e of part.after(w)) w.root.appendChild(e);
  const marker = w.el(clark(NS.TS, 'page'));
  w.root.insertBefore(marker, w.root.firstChild);
  const text = w.toString();
  const cut = text.indexOf('<ts:page/>');
  const end = text.lastIndexOf('</d:multistatus>');
  const head = text.slice(0, cut);
  const inner = end === -1 ? '' : text.slice(cut + '<ts:page/>'.length, end);
  return `${part.first ? head : ''}${inner}${part.last ? '</d:multistatus>\n' : ''}`;
}
