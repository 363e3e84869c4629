import { describe, expect, it } from 'vitest';
import type { ServiceName } from '@tasksvc/proto';
import { deriveSubkeys, type RingService, type Subkey } from '@tasksvc/proto/ring-keys.ts';
import { ConfigError, configWarnings, loadConfig } from './config.ts';
import { encryptSecret } from './crypto.ts';
import { AUTH_SECRET_KEY_ID, createSecretBox, LEGACY_KEY_ID, parseKeyRing, parseSubkeys, purposeRing, secretBox, SecretUnreadable, subkeyBox, type RingKey } from './keyring.ts';

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

describe('a derived ring (SECRETS_SUBKEYS)', () => {
  const base = { DATABASE_URL: 'postgres://u@h/db', AUTH_TRUST_HOST: 'true', TOTP_ENCRYPTION_KEY: TOTP };
  const master = `k2:${K2},k1:${K1}`;
  const derived = (service: RingService, spec = master) => deriveSubkeys(ring(spec), service);
  const asMaster = (service: ServiceName) => loadConfig({ ...base, SECRETS_KEYRING: master }, service);
  const asDerived = (service: RingService) => loadConfig({ ...base, SECRETS_SUBKEYS: derived(service) }, service);
  const problems = (env: Record<string, string>, service?: ServiceName) => {
    try {
      loadConfig({ ...base, ...env }, service);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
    return [];
  };

  it('seals and opens exactly as the master ring does: a value sealed under either opens under the other, key ids unchanged', () => {
    for (const [service, purpose] of [
      ['webhook', 'endpoint-secret'],
      ['notifier', 'channel-secrets'],
    ] as const) {
      const byMaster = secretBox(asMaster(service), service, purpose);
      const byDerived = secretBox(asDerived(service), service, purpose);
      expect(byDerived.currentKeyId).toBe('k2');
      const a = byMaster.seal('from the master');
      const b = byDerived.seal('from the derived ring');
      expect(byDerived.keyIdOf(b)).toBe('k2');
      expect(byDerived.open(a)).toBe('from the master');
      expect(byMaster.open(b)).toBe('from the derived ring');
      // a value under the older key, sealed before the split, opens too
      expect(byDerived.open(createSecretBox(ring(`k1:${K1}`), `${service}/${purpose}`).seal('older'))).toBe('older');
    }
    // the notifier's e-mail confirmation links: the same keys, so links mailed before the split still open
    expect(purposeRing(asDerived('notifier'), 'notifier/email-confirm-links')).toEqual(purposeRing(asMaster('notifier'), 'notifier/email-confirm-links'));
  });

  it("holds nothing that opens another service's values", () => {
    const webhookDerived = asDerived('webhook');
    const notifierValue = secretBox(asMaster('notifier'), 'notifier', 'channel-secrets').seal('pushover token');
    // the webhook's derived ring has no key for the notifier's purpose at all…
    expect(purposeRing(webhookDerived, 'notifier/channel-secrets')).toEqual([]);
    expect(() => secretBox(webhookDerived, 'notifier', 'channel-secrets').open(notifierValue)).toThrow(SecretUnreadable);
    // …and its own subkeys, tried as the notifier's under the same key id, do not open it either
    const stolen = purposeRing(webhookDerived, 'webhook/endpoint-secret');
    expect(() => subkeyBox(stolen, 'notifier/channel-secrets').open(notifierValue)).toThrow(/key "k2" in SECRETS_KEYRING is not the key/);
    // nor does any value of the derived ring equal a key of the master
    for (const k of parseSubkeys(derived('webhook')) as Subkey[]) expect([K1, K2]).not.toContain(k.key.toString('hex'));
  });

  it('a malformed or misplaced value stops the start with a message naming SECRETS_SUBKEYS', () => {
    const hex = 'ab'.repeat(32);
    for (const [bad, why] of [
      [`k1:${hex}`, /<service>\/<purpose>:<id>:<64 hex/],
      [`webhook/signing:k1:${hex}`, /not a purpose with a key ring/],
      [`webhook/endpoint-secret:legacy:${hex}`, /not a key id/],
      [`webhook/endpoint-secret:k1:${hex.slice(2)}`, /exactly 64 hex/],
      [`webhook/endpoint-secret:k1:${hex},webhook/endpoint-secret:k1:${hex}`, /appears twice/],
    ] as const) {
      expect(problems({ SECRETS_SUBKEYS: bad }, 'webhook'), bad).toEqual([{ variable: 'SECRETS_SUBKEYS', message: expect.stringMatching(why) }]);
    }
    // another service's ring, or one purpose missing, or purposes under different key ids
    expect(problems({ SECRETS_SUBKEYS: derived('notifier') }, 'webhook')).toEqual([{ variable: 'SECRETS_SUBKEYS', message: expect.stringMatching(/holds keys of notifier\/channel-secrets, notifier\/email-confirm-links, which the webhook service does not use/) }]);
    const channelOnly = derived('notifier').split(',').filter((e) => e.startsWith('notifier/channel-secrets:')).join(',');
    expect(problems({ SECRETS_SUBKEYS: channelOnly }, 'notifier')).toEqual([{ variable: 'SECRETS_SUBKEYS', message: expect.stringMatching(/no key for notifier\/email-confirm-links/) }]);
    const mixed = [...derived('notifier', `k1:${K1}`).split(',').filter((e) => e.includes('channel')), ...derived('notifier').split(',').filter((e) => e.includes('email'))].join(',');
    expect(problems({ SECRETS_SUBKEYS: mixed }, 'notifier')).toEqual([{ variable: 'SECRETS_SUBKEYS', message: expect.stringMatching(/different key ids per purpose/) }]);
    // the derived ring alone is enough for a ring service started on its own (no AUTH_SECRET)
    expect(problems({ SECRETS_SUBKEYS: derived('webhook') }, 'webhook')).toEqual([]);
    expect(problems({}, 'webhook')).toEqual([{ variable: 'SECRETS_KEYRING', message: expect.stringMatching(/SECRETS_SUBKEYS/) }]);
  });

  it('given both, SECRETS_KEYRING wins and a warning says SECRETS_SUBKEYS is ignored', () => {
    const config = loadConfig({ ...base, SECRETS_KEYRING: `k3:${'44'.repeat(32)}`, SECRETS_SUBKEYS: derived('webhook') }, 'webhook');
    expect(secretBox(config, 'webhook', 'endpoint-secret').currentKeyId).toBe('k3');
    expect(configWarnings(config)).toContainEqual(expect.stringMatching(/SECRETS_SUBKEYS is ignored: SECRETS_KEYRING is set too and wins/));
    expect(configWarnings(asDerived('webhook')).join('\n')).not.toMatch(/SECRETS_SUBKEYS/);
  });

  it('names SECRETS_SUBKEYS when a key it lacks is needed', () => {
    const sealed = createSecretBox(ring(`k0:${'55'.repeat(32)}`), 'webhook/endpoint-secret').seal('x');
    expect(() => secretBox(asDerived('webhook'), 'webhook', 'endpoint-secret').open(sealed)).toThrow(/key "k0", which SECRETS_SUBKEYS no longer lists/);
  });
});
