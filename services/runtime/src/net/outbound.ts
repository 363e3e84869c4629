import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressAllowed, checkAddress, hostAllowed, normalizeHost, parseAllowList, type AllowList } from './address.ts';

/**
 * The one way to reach a user-supplied URL (webhooks, HTTP Alert, ntfy, push services, channel
 * APIs). It resolves the host, refuses private, loopback, link-local, CGNAT, multicast and metadata
 * addresses (IPv4 and IPv6) unless OUTBOUND_ALLOW_LIST permits them, and then connects to exactly
 * the address it checked, so a second DNS answer cannot rebind the request elsewhere. Redirects are
 * never followed. Plain http:// is allowed only for allow-listed hosts or networks.
 */

export type OutboundErrorKind = 'invalid_url' | 'blocked' | 'dns' | 'network' | 'timeout';

export class OutboundError extends Error {
  readonly kind: OutboundErrorKind;
  constructor(kind: OutboundErrorKind, message: string) {
    super(message);
    this.name = 'OutboundError';
    this.kind = kind;
  }
}

export interface OutboundTarget {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
}

export interface OutboundRequest {
  url: string;
  method?: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** whole exchange, connect to last body byte (default 15 s) */
  timeoutMs?: number;
  /** response bytes kept (default 64 KiB); the rest is discarded */
  maxResponseBytes?: number;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  address: string;
  durationMs: number;
}

export interface Outbound {
  /** Syntax, scheme, DNS and address checks; resolves to the pinned target or throws OutboundError. */
  check(url: string): Promise<OutboundTarget>;
  request(req: OutboundRequest): Promise<OutboundResponse>;
}

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

const defaultResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Keep-alive sockets to one host and port at most; further requests to it wait in the agent, their timeouts running. */
export const MAX_SOCKETS_PER_HOST = 64;
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST, keepAliveMsecs: 5_000 }),
  https: new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST, keepAliveMsecs: 5_000 }),
};

export function createOutbound(opts: { allowList: readonly string[]; resolver?: Resolver; userAgent?: string }): Outbound {
  const allow: AllowList = parseAllowList(opts.allowList);
  const resolve = opts.resolver ?? defaultResolver;
  const userAgent = opts.userAgent ?? 'TaskService/1 (+outbound)';

  async function check(raw: string): Promise<OutboundTarget> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundError('invalid_url', 'is not a valid absolute URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundError('invalid_url', 'must use https://');
    if (url.username || url.password) throw new OutboundError('invalid_url', 'must not contain credentials');
    const host = normalizeHost(url.hostname);
    if (!host) throw new OutboundError('invalid_url', 'has no host');
    let addresses: { address: string; family: number }[];
    if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
    else {
      try {
        addresses = await resolve(host);
      } catch (err) {
        throw new OutboundError('dns', `host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      if (addresses.length === 0) throw new OutboundError('dns', `host ${host} does not resolve`);
    }
    // Messages reach the person who typed the URL: plain words, no operator variable (docs/configuration name it).
    // Every answer must pass: otherwise a host could list one public and one private address.
    for (const a of addresses) {
      const verdict = checkAddress(allow, host, a.address);
      if (!verdict.ok) throw new OutboundError('blocked', `resolves to a ${verdict.reason} address (${a.address}), which this server does not send to; use a public address, or ask the server's operator to allow it`);
    }
    const chosen = addresses[0]!;
    if (url.protocol === 'http:') {
      const listed = hostAllowed(allow, host) || addresses.every((a) => addressAllowed(allow, a.address));
      if (!listed) throw new OutboundError('invalid_url', "must use https:// (plain http:// only to addresses the server's operator has allowed)");
    }
    return { url, host, address: chosen.address, family: chosen.family === 6 ? 6 : 4 };
  }

  async function request(req: OutboundRequest): Promise<OutboundResponse> {
    const target = await check(req.url);
    const started = performance.now();
    const timeoutMs = req.timeoutMs ?? 15_000;
    const maxBytes = req.maxResponseBytes ?? 64 * 1024;
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body, 'utf8') : req.body;
    const pinned: LookupFunction = (_hostname, options, cb) => {
      if (options.all) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
      else cb(null, target.address, target.family);
    };
    const isHttps = target.url.protocol === 'https:';
    const headers: Record<string, string> = { 'user-agent': userAgent, ...req.headers };
    if (body) headers['content-length'] = String(body.length);
    return new Promise<OutboundResponse>((resolvePromise, reject) => {
      let settled = false;
      const finish = (err: Error | null, res?: OutboundResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolvePromise(res!);
      };
      const r = (isHttps ? https : http).request(
        {
          protocol: target.url.protocol,
          hostname: target.host,
          port: target.url.port || (isHttps ? 443 : 80),
          path: `${target.url.pathname}${target.url.search}`,
          method: req.method ?? 'POST',
          headers,
          lookup: pinned,
          agent: isHttps ? agents.https : agents.http,
          ...(isHttps && !isIP(target.host) ? { servername: target.host } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          res.on('data', (c: Buffer) => {
            if (kept < maxBytes) {
              chunks.push(c.subarray(0, maxBytes - kept));
              kept += Math.min(c.length, maxBytes - kept);
            }
          });
          res.on('end', () =>
            finish(null, {
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
              address: target.address,
              durationMs: Math.round(performance.now() - started),
            }),
          );
          res.on('error', (e) => finish(new OutboundError('network', e.message)));
        },
      );
      const timer = setTimeout(() => {
        const e = new OutboundError('timeout', `no complete response within ${timeoutMs} ms`);
        finish(e);
        r.destroy(e);
      }, timeoutMs);
      r.on('error', (e: NodeJS.ErrnoException) => finish(e instanceof OutboundError ? e : new OutboundError('network', e.code ? `${e.code}: ${e.message}` : e.message)));
      r.end(body);
    });
  }

  return { check, request };
}

/** Seconds to wait from a Retry-After header (delta seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\s*\d+\s*$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}
