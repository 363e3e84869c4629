import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LINK_LIFETIME_MS, notificationLinks, signLink, verifyLink } from './action-links.ts';

const key = randomBytes(32);
const now = new Date('2026-07-01T10:00:00Z');
const taskId = '7f1d2c1e-0000-4000-8000-000000000001';
const userId = '7f1d2c1e-0000-4000-8000-000000000002';

describe('reminder action links', () => {
  it('a link verifies with its key and carries its claims; both links of a notification share a nonce', () => {
    const links = notificationLinks(key, taskId, userId, now);
    const done = verifyLink(key, links.done, now);
    const snooze = verifyLink(key, links.snooze, now);
    expect(done).toMatchObject({ ok: true, claims: { action: 'done', taskId, userId, expires: now.getTime() + LINK_LIFETIME_MS } });
    if (done.ok) expect(done.claims.nonce).toMatch(/^[0-9a-f]{24}$/);
    expect(snooze).toMatchObject({ ok: true, claims: { action: 'snooze' } });
    if (done.ok && snooze.ok) expect(done.claims.nonce).toBe(snooze.claims.nonce);
    expect(links.done).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    // short enough for one URL path segment (the gateway's router allows 100 characters)
    expect(links.done.length).toBeLessThanOrEqual(100);
  });

  it('another key, a changed claim or signature, or garbage is invalid', () => {
    const link = signLink(key, { action: 'done', taskId, userId, nonce: 'ab'.repeat(12), expires: now.getTime() + 1000 });
    expect(verifyLink(randomBytes(32), link, now)).toEqual({ ok: false, why: 'invalid' });
    const [text, sig] = link.split('.') as [string, string];
    const changed = Buffer.from(text, 'base64url');
    changed[0] = 2; // done → snooze
    const forged = changed.toString('base64url');
    expect(verifyLink(key, `${forged}.${sig}`, now)).toEqual({ ok: false, why: 'invalid' });
    expect(verifyLink(key, `${text}.${sig.slice(0, -2)}AA`, now)).toEqual({ ok: false, why: 'invalid' });
    for (const bad of ['', 'abc', 'a.b.c', `${text}.`, `.${sig}`]) expect(verifyLink(key, bad, now)).toEqual({ ok: false, why: 'invalid' });
  });

  it('expires after its lifetime', () => {
    const link = notificationLinks(key, taskId, userId, now).done;
    expect(verifyLink(key, link, new Date(now.getTime() + LINK_LIFETIME_MS)).ok).toBe(true);
    expect(verifyLink(key, link, new Date(now.getTime() + LINK_LIFETIME_MS + 1))).toEqual({ ok: false, why: 'expired' });
  });
});
