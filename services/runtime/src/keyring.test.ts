import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';
import { encryptSecret } from './crypto.ts';
import { AUTH_SECRET_KEY_ID, createSecretBox, LEGACY_KEY_ID, parseKeyRing, secretBox, SecretUnreadable, type RingKey } from './keyring.ts';

const K1 = '11'.repeat(32);
const K2 = '22'.repeat(32);
const TOTP = '33'.repeat(32);
const ring = (spec: string) => parseKeyRing(spec) as RingKey[];

describe('SECRETS_KEYRING', () => {
  it('is <id>:<64 hex>, comma-separated, the first key current', () => {
    expect(ring(`new:${K2}, old:${K1}`).map((k) => k.id)).toEqual(['new', 'old']);
    const base = { DATABASE_URL: 'postgres://u@h/db', AUTH_SECRET: 'x'.repeat(32), AUTH_TRUST_HOST: 'true' };
    expect(loadConfig({ ...base, SECRETS_KEYRING: `k1:${K1}` }).SECRETS_KEYRING?.[0]?.id).toBe('k1');
    expect(loadConfig({ ...base, SECRETS_KEYRING: '' }).SECRETS_KEYRING).toBeUndefined();
    for (const [bad, why] of [
      [K1, /<id>:<64 hex/],
      [`k1:${K1.slice(2)}`, /exactly 64 hex/],
      [`k1:${K1},k1:${K2}`, /appears twice/],
      [`legacy:${K1}`, /reserved/],
      [`auth-secret:${K1}`, /reserved/],
      [`bad id:${K1}`, /<id>:<64 hex/],
    ] as const) {
      let err: unknown;
      try {
        loadConfig({ ...base, SECRETS_KEYRING: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([{ variable: 'SECRETS_KEYRING', message: expect.stringMatching(why) }]);
    }
  });
});

describe('a secret box', () => {
  it('seals under the current key, naming it, and opens under any key of the ring', () => {
    const old = createSecretBox(ring(`k1:${K1}`), 'webhook/endpoint-secret');
    const sealed = old.seal('s3cret');
    expect(sealed).toMatch(/^kr1:k1:/);
    const rotated = createSecretBox(ring(`k2:${K2},k1:${K1}`), 'webhook/endpoint-secret');
    expect(rotated.open(sealed)).toBe('s3cret');
    expect(rotated.keyIdOf(rotated.seal('x'))).toBe('k2');
  });

  it('keeps purposes apart: one purpose\'s value never opens as another\'s', () => {
    const sealed = createSecretBox(ring(`k1:${K1}`), 'webhook/endpoint-secret').seal('s3cret');
    expect(() => createSecretBox(ring(`k1:${K1}`), 'notifier/channel-secrets').open(sealed)).toThrow(SecretUnreadable);
  });

  it('opens the pre-ring form with TOTP_ENCRYPTION_KEY (the upgrade path) and says why it cannot otherwise', () => {
    const legacy = encryptSecret(TOTP, 'from the old release');
    const box = createSecretBox(ring(`k1:${K1}`), 'webhook/endpoint-secret', TOTP);
    expect(box.keyIdOf(legacy)).toBe(LEGACY_KEY_ID);
    expect(box.open(legacy)).toBe('from the old release');
    expect(() => createSecretBox(ring(`k1:${K1}`), 'webhook/endpoint-secret').open(legacy)).toThrow(/TOTP_ENCRYPTION_KEY, which sealed it, is not set/);
    expect(() => createSecretBox(ring(`k1:${K1}`), 'webhook/endpoint-secret', K2).open(legacy)).toThrow(/TOTP_ENCRYPTION_KEY was changed/);
  });

  it('names a missing or wrong key, and cannot seal without a ring', () => {
    const sealed = createSecretBox(ring(`k1:${K1}`), 'p').seal('x');
    expect(() => createSecretBox(ring(`k2:${K2}`), 'p').open(sealed)).toThrow(/key "k1", which SECRETS_KEYRING no longer lists/);
    expect(() => createSecretBox(ring(`k1:${K2}`), 'p').open(sealed)).toThrow(/key "k1" in SECRETS_KEYRING is not the key it was sealed under/);
    const none = createSecretBox([], 'p');
    expect(none.canSeal).toBe(false);
    expect(() => none.seal('x')).toThrow(/SECRETS_KEYRING/);
  });

  it('without SECRETS_KEYRING seals under a key derived from AUTH_SECRET, which a ring set later still opens and replaces', () => {
    const spec = { AUTH_SECRET: 'a'.repeat(32), TOTP_ENCRYPTION_KEY: TOTP };
    const plain = secretBox({ ...spec, SECRETS_KEYRING: undefined }, 'webhook', 'endpoint-secret');
    const sealed = plain.seal('s3cret');
    expect(plain.keyIdOf(sealed)).toBe(AUTH_SECRET_KEY_ID);
    // a TOTP key rotation does not touch it
    expect(secretBox({ ...spec, TOTP_ENCRYPTION_KEY: K2, SECRETS_KEYRING: undefined }, 'webhook', 'endpoint-secret').open(sealed)).toBe('s3cret');
    // a ring set later seals under its own key and still opens the value (the start's re-seal moves it)
    const ringed = secretBox({ ...spec, SECRETS_KEYRING: ring(`k1:${K1}`) }, 'webhook', 'endpoint-secret');
    expect(ringed.currentKeyId).toBe('k1');
    expect(ringed.open(sealed)).toBe('s3cret');
    // another AUTH_SECRET without a ring cannot open it, and says what happened
    expect(() => secretBox({ AUTH_SECRET: 'b'.repeat(32), SECRETS_KEYRING: undefined }, 'webhook', 'endpoint-secret').open(sealed)).toThrow(/derived from AUTH_SECRET, which was changed since/);
  });
});
