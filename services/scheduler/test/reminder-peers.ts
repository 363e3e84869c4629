import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as ece from 'http_ece';

/**
 * Real local peers for reminder deliveries: an ntfy-compatible server (JSON publishing to its root,
 * answering as ntfy does with the stored message) and a Web Push endpoint that decrypts what it is
 * sent (aes128gcm, RFC 8291) with the keys of the browser subscription it hands out. Both record
 * what arrived and when.
 */

export interface NtfyMessage {
  id: string;
  receivedAt: number;
  topic: string;
  title: string;
  message: string;
  tags?: string[];
  click?: string;
  actions?: { action: string; label: string; url: string; method?: string; clear?: boolean }[];
}

export interface PushMessage {
  receivedAt: number;
  title: string;
  body: string;
  url: string | null;
  tag: string | null;
  actions?: { action: string; title: string; url: string }[];
}

export interface ReminderPeers {
  url: string;
  ntfy: NtfyMessage[];
  push: PushMessage[];
  /** a browser's push subscription whose messages this endpoint decrypts */
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
  stop(): Promise<void>;
}

export async function startReminderPeers(): Promise<ReminderPeers> {
  const ntfy: NtfyMessage[] = [];
  const push: PushMessage[] = [];
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = randomBytes(16);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const receivedAt = Date.now();
      try {
        if (req.method === 'POST' && req.url === '/') {
          // ntfy's JSON publishing: the topic in the body, the message as the server stores it back
          const m = JSON.parse(raw.toString('utf8')) as Omit<NtfyMessage, 'id' | 'receivedAt'>;
          if (!m.topic || typeof m.message !== 'string') return res.writeHead(400, { 'content-type': 'application/json' }).end('{"code":40001,"error":"invalid request"}');
          const stored = { ...m, id: randomUUID().slice(0, 12), receivedAt };
          ntfy.push(stored);
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: stored.id, time: Math.floor(receivedAt / 1000), event: 'message', topic: m.topic, title: m.title, message: m.message }));
        }
        if (req.method === 'POST' && req.url === '/push/device') {
          if (req.headers['content-encoding'] !== 'aes128gcm' || !/^vapid t=/.test(String(req.headers.authorization))) return res.writeHead(400).end();
          const plain = ece.decrypt(raw, { version: 'aes128gcm', privateKey: ecdh, authSecret: auth });
          push.push({ ...(JSON.parse(plain.toString('utf8')) as Omit<PushMessage, 'receivedAt'>), receivedAt });
          return res.writeHead(201).end();
        }
        res.writeHead(404).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    ntfy,
    push,
    subscription: { endpoint: `${url}/push/device`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } },
    async stop() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
