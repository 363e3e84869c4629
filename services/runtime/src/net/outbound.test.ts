import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbound, OutboundError, parseRetryAfter } from './outbound.ts';

let server: Server;
let port = 0;
const seen: { host: string | undefined; url: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ host: req.headers.host, url: req.url });
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/elsewhere' }).end();
      return;
    }
    if (req.url === '/hang') return; // never answers
    res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundError);
    return err as OutboundError;
  }
  throw new Error('expected the request to be refused');
}

describe('outbound guard against a real local receiver', () => {
  it('refuses loopback without an allow-list entry, before connecting', async () => {
    const before = seen.length;
    const err = await failure(createOutbound({ allowList: [] }).request({ url: `http://127.0.0.1:${port}/` }));
    expect(err.kind).toBe('blocked');
    expect(err.message).toMatch(/loopback/);
    // shown to the person who typed the URL: plain words, no operator variable (issue 55)
    expect(err.message).not.toMatch(/[A-Z]+_[A-Z_]+/);
    expect(err.message).toContain("ask the server's operator");
    expect(seen.length).toBe(before);
  });

  it('refuses loopback spelled as any IPv6 literal that embeds it (compatible, mapped, translated, NAT64, 6to4)', async () => {
    const before = seen.length;
    const out = createOutbound({ allowList: [] });
    for (const host of ['[::127.0.0.1]', '[::ffff:0:127.0.0.1]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]', '[64:ff9b::127.0.0.1]', '[2002:7f00:1::1]']) {
      const err = await failure(out.request({ url: `http://${host}:${port}/` }));
      expect(err.kind, host).toBe('blocked');
    }
    // and through DNS: a name whose AAAA answer embeds 10.0.0.1
    const viaDns = createOutbound({ allowList: [], resolver: async () => [{ address: '::ffff:0:a00:1', family: 6 }] });
    expect((await failure(viaDns.check('https://sneaky.example/'))).message).toMatch(/private/);
    expect(seen.length).toBe(before);
  });

  it('refuses a name that resolves to a private address (and the metadata address)', async () => {
    const resolver = async (host: string) => [{ address: host === 'meta.example' ? '169.254.169.254' : '10.0.0.7', family: 4 }];
    const out = createOutbound({ allowList: [], resolver });
    expect((await failure(out.check('https://internal.example/hook'))).kind).toBe('blocked');
    expect((await failure(out.check('https://meta.example/latest'))).message).toMatch(/169\.254\.169\.254/);
  });

  it('refuses when any one of several answers is private', async () => {
    const out = createOutbound({ allowList: [], resolver: async () => [{ address: '93.184.216.34', family: 4 }, { address: '::1', family: 6 }] });
    expect((await failure(out.check('https://mixed.example/'))).kind).toBe('blocked');
  });

  it('connects to the address it checked: a second DNS answer cannot rebind the request', async () => {
    let calls = 0;
    const resolver = async () => {
      calls++;
      return [{ address: calls === 1 ? '127.0.0.1' : '10.9.9.9', family: 4 }];
    };
    const out = createOutbound({ allowList: ['127.0.0.1/32'], resolver });
    const res = await out.request({ url: `http://rebind.example:${port}/pinned`, method: 'GET' });
    expect(res.status).toBe(200);
    expect(res.body).toBe('hello');
    expect(res.address).toBe('127.0.0.1');
    expect(calls).toBe(1);
    expect(seen.at(-1)).toEqual({ host: `rebind.example:${port}`, url: '/pinned' });
  });

  it('plain http only for allow-listed hosts; unsupported schemes and credentials refused', async () => {
    const out = createOutbound({ allowList: [], resolver: async () => [{ address: '93.184.216.34', family: 4 }] });
    expect((await failure(out.check('http://public.example/hook'))).message).toMatch(/https/);
    expect((await out.check('https://public.example/hook')).address).toBe('93.184.216.34');
    expect((await failure(out.check('ftp://public.example/'))).kind).toBe('invalid_url');
    expect((await failure(out.check('https://u:p@public.example/'))).kind).toBe('invalid_url');
    expect((await failure(out.check('not a url'))).kind).toBe('invalid_url');
  });

  it('never follows redirects', async () => {
    const res = await createOutbound({ allowList: ['127.0.0.1'] }).request({ url: `http://127.0.0.1:${port}/redirect`, method: 'GET' });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/elsewhere');
  });

  it('gives up on a receiver that never answers', async () => {
    const err = await failure(createOutbound({ allowList: ['127.0.0.1'] }).request({ url: `http://127.0.0.1:${port}/hang`, timeoutMs: 300 }));
    expect(err.kind).toBe('timeout');
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('120')).toBe(120);
    expect(parseRetryAfter(new Date(1_000_000 + 30_000).toUTCString(), 1_000_000)).toBe(30);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});
