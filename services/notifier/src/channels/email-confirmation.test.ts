import { randomUUID } from 'node:crypto';
import { parseKeyRing, type RingKey } from '@tasksvc/runtime';
import { describe, expect, it } from 'vitest';
import { confirmLink, readConfirmLink } from '../domain/confirm-links.ts';
import { confirmKeys } from './email-confirmation.ts';

const ring = (spec: string) => parseKeyRing(spec) as RingKey[];
const OLD = `k1:${'a1'.repeat(32)}`;
const NEW = `k2:${'b2'.repeat(32)}`;

describe('confirmation link keys', () => {
  it('come from the notifier ring: a notifier given SECRETS_KEYRING and no AUTH_SECRET (as the operator deploys it) signs and reads links', () => {
    const config = { SECRETS_KEYRING: ring(OLD), AUTH_SECRET: undefined as unknown as string };
    const user = randomUUID();
    const { token } = confirmLink(confirmKeys(config)[0]!, user, new Date());
    const check = readConfirmLink(confirmKeys(config), token, new Date());
    expect(check.ok && check.claims.userId).toBe(user);
  });

  it('a link mailed before a ring rotation still confirms while the old key stays in the ring, and not once it is retired', () => {
    const user = randomUUID();
    const { token } = confirmLink(confirmKeys({ SECRETS_KEYRING: ring(OLD), AUTH_SECRET: 'x'.repeat(40) })[0]!, user, new Date());
    expect(readConfirmLink(confirmKeys({ SECRETS_KEYRING: ring(`${NEW},${OLD}`), AUTH_SECRET: 'x'.repeat(40) }), token, new Date()).ok).toBe(true);
    expect(readConfirmLink(confirmKeys({ SECRETS_KEYRING: ring(NEW), AUTH_SECRET: undefined as unknown as string }), token, new Date())).toEqual({ ok: false, why: 'invalid' });
  });

  it('a notifier with neither key says what to set', () => {
    expect(() => confirmKeys({ SECRETS_KEYRING: undefined, AUTH_SECRET: undefined as unknown as string })).toThrow(/SECRETS_KEYRING/);
  });
});
