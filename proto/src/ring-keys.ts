import { hkdfSync } from 'node:crypto';

/**
 * The key ring's format and its per-service, per-purpose subkeys: one place for the services
 * (runtime keyring.ts), the operator (it derives each ring service's Secret) and `tools/keys.ts derive`
 * (compose's .env). Not exported from the package index: it needs node:crypto.
 *
 * SECRETS_KEYRING (the master ring) is `<id>:<64 hex>[,…]`, the first seals, every key opens.
 * SECRETS_SUBKEYS (a derived ring) is `<service>/<purpose>:<id>:<64 hex>[,…]`: the very subkeys the
 * service would derive from the master ring itself, under the same key ids and in the same order, so a
 * value sealed under either opens under the other and nothing is re-encrypted. A service holding only
 * its own derived ring cannot compute another service's subkeys (HKDF is one-way).
 */

export const KEY_ID_RE = /^[A-Za-z0-9_.-]{1,32}$/;
/** The key id reported for a value in the pre-ring form. */
export const LEGACY_KEY_ID = 'legacy';
/** The key id of the ring key derived from AUTH_SECRET (the ring of an installation without SECRETS_KEYRING). */
export const AUTH_SECRET_KEY_ID = 'auth-secret';

export interface RingKey {
  id: string;
  key: Buffer;
}

/** What each ring service seals or signs under its ring, one subkey per purpose. */
export const RING_PURPOSES = {
  webhook: ['endpoint-secret'],
  notifier: ['channel-secrets', 'email-confirm-links'],
} as const;
export type RingService = keyof typeof RING_PURPOSES;
export const RING_SERVICES = Object.keys(RING_PURPOSES) as RingService[];

/** Every `<service>/<purpose>` a derived ring may name. */
export const RING_PURPOSE_NAMES: ReadonlySet<string> = new Set(RING_SERVICES.flatMap((s) => RING_PURPOSES[s].map((p) => `${s}/${p}`)));

const hex64 = /^[0-9a-fA-F]{64}$/;

/** Parse SECRETS_KEYRING; returns the problem as a string (for config validation) or the keys, current first. */
export function parseKeyRing(spec: string): RingKey[] | string {
  const entries = spec.split(',').map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) return 'must name at least one key: <id>:<64 hex characters>';
  const out: RingKey[] = [];
  for (const entry of entries) {
    const i = entry.indexOf(':');
    const id = i < 0 ? '' : entry.slice(0, i);
    const hex = i < 0 ? entry : entry.slice(i + 1);
    if (!KEY_ID_RE.test(id)) return `each key is <id>:<64 hex characters> with an id of letters, digits, '.', '_' or '-' (1 to 32); got "${entry.slice(0, 12)}…"`;
    if (id === LEGACY_KEY_ID || id === AUTH_SECRET_KEY_ID) return `the key id "${id}" is reserved`;
    if (!hex64.test(hex)) return `key "${id}" must be exactly 64 hex characters (32 bytes; \`openssl rand -hex 32\`)`;
    if (out.some((k) => k.id === id)) return `key id "${id}" appears twice`;
    out.push({ id, key: Buffer.from(hex, 'hex') });
  }
  return out;
}

/**
 * The subkey of one `<service>/<purpose>` from one ring key: HKDF-SHA256, salt `tasksvc-keyring`, info
 * the purpose's name. The e-mail confirmation links keep the derivation they were introduced with
 * (runtime crypto.ts `purposeKey` of the key's hex), so links mailed before derived rings still open.
 */
export function deriveSubkey(ringKey: Buffer, purpose: string): Buffer {
  if (purpose === 'notifier/email-confirm-links') return Buffer.from(hkdfSync('sha256', ringKey.toString('hex'), 'tasksvc', 'email-confirm-links/v1', 32));
  return Buffer.from(hkdfSync('sha256', ringKey, 'tasksvc-keyring', purpose, 32));
}

/** One entry of a derived ring. */
export interface Subkey {
  /** `<service>/<purpose>` */
  purpose: string;
  id: string;
  key: Buffer;
}

/** The SECRETS_SUBKEYS value of one service: each of its purposes' subkeys of every ring key, in ring order. */
export function deriveSubkeys(ring: readonly RingKey[], service: RingService): string {
  return RING_PURPOSES[service]
    .flatMap((p) => ring.map((k) => `${service}/${p}:${k.id}:${deriveSubkey(k.key, `${service}/${p}`).toString('hex')}`))
    .join(',');
}

/** Parse SECRETS_SUBKEYS; the problem as a string, or the entries in the order given (per purpose: current first). */
export function parseSubkeys(spec: string): Subkey[] | string {
  const entries = spec.split(',').map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) return 'must name at least one key: <service>/<purpose>:<id>:<64 hex characters>';
  const out: Subkey[] = [];
  for (const entry of entries) {
    const [purpose = '', id = '', hex = '', ...rest] = entry.split(':');
    if (rest.length || !hex) return `each key is <service>/<purpose>:<id>:<64 hex characters> (\`node tools/keys.ts derive\` writes them); got "${entry.slice(0, 24)}…"`;
    if (!RING_PURPOSE_NAMES.has(purpose)) return `"${purpose.slice(0, 40)}" is not a purpose with a key ring (one of ${[...RING_PURPOSE_NAMES].join(', ')})`;
    if (!KEY_ID_RE.test(id) || id === LEGACY_KEY_ID || id === AUTH_SECRET_KEY_ID) return `${purpose}: "${id.slice(0, 40)}" is not a key id of SECRETS_KEYRING`;
    if (!hex64.test(hex)) return `${purpose} key "${id}" must be exactly 64 hex characters`;
    if (out.some((k) => k.purpose === purpose && k.id === id)) return `${purpose} key "${id}" appears twice`;
    out.push({ purpose, id, key: Buffer.from(hex, 'hex') });
  }
  return out;
}
