import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { ServiceName } from '@tasksvc/proto';
import { AUTH_SECRET_KEY_ID, deriveSubkey, LEGACY_KEY_ID, RING_PURPOSES, type RingKey, type Subkey } from '@tasksvc/proto/ring-keys.ts';
import type { Config } from './config.ts';
import { decryptSecret } from './crypto.ts';
import type { Queryable } from './db/orm.ts';
import type { Logger } from './logger.ts';
import { detached } from './tracing.ts';

/**
 * Secrets the services keep for their users (webhook signing secrets, notification channel secrets)
 * are sealed under SECRETS_KEYRING, never under TOTP_ENCRYPTION_KEY (that key is TOTP's alone, and
 * rotating it invalidates TOTP only, as the spec says).
 *
 * The ring is `<id>:<64 hex>[,<id>:<64 hex>…]`: the first key seals, every key opens. Each purpose
 * seals under its own subkey, HKDF-SHA256(ring key, info `<service>/<purpose>`), so one purpose's
 * ciphertext never opens under another's. A sealed value names its key:
 * `kr1:<key id>:base64(iv):base64(tag):base64(ciphertext)`; a value in the older three-part form
 * (`iv:tag:ciphertext`, sealed directly under TOTP_ENCRYPTION_KEY before the ring existed) still opens
 * with TOTP_ENCRYPTION_KEY and is re-sealed under the ring by `resealColumn`.
 *
 * Without SECRETS_KEYRING (an installation configured from the spec's variables alone) the ring is one
 * key derived from AUTH_SECRET, id `auth-secret`: secrets can still be stored and survive a TOTP key
 * rotation. Once SECRETS_KEYRING is set, that key only opens (it stays last in the ring) and the
 * background re-seal moves its values under the configured key.
 *
 * A service may instead be given its derived ring, SECRETS_SUBKEYS (proto ring-keys.ts): the same
 * subkeys under the same ids, already derived, so it holds nothing from which another service's keys
 * follow. Stored values are the same bytes either way. SECRETS_KEYRING wins when both are set.
 */

export { AUTH_SECRET_KEY_ID, KEY_ID_RE, LEGACY_KEY_ID, parseKeyRing, parseSubkeys, type RingKey } from '@tasksvc/proto/ring-keys.ts';
const PREFIX = 'kr1';

/** Why a derived ring does not fit one service (null: it does): another's purposes, a purpose missing, key ids differing. */
export function subkeysProblem(subkeys: readonly Subkey[], service: ServiceName): string | null {
  const own = (RING_PURPOSES as Partial<Record<ServiceName, readonly string[]>>)[service]?.map((p) => `${service}/${p}`) ?? [];
  const foreign = [...new Set(subkeys.map((k) => k.purpose).filter((p) => !own.includes(p)))];
  if (foreign.length) return `holds keys of ${foreign.join(', ')}, which the ${service} service does not use: give each service only its own derived ring (\`node tools/keys.ts derive\`)`;
  const ids = own.map((p) => subkeys.filter((k) => k.purpose === p).map((k) => k.id).join(','));
  const missing = own.filter((_, i) => !ids[i]);
  if (missing.length) return `has no key for ${missing.join(', ')}: derive every purpose of the ${service} service together (\`node tools/keys.ts derive\`)`;
  if (new Set(ids).size > 1) return `lists different key ids per purpose (${own.map((p, i) => `${p}: ${ids[i]}`).join('; ')}): derive them together from one SECRETS_KEYRING`;
  return null;
}

export class SecretUnreadable extends Error {
  readonly keyId: string;
  constructor(message: string, keyId: string) {
    super(message);
    this.name = 'SecretUnreadable';
    this.keyId = keyId;
  }
}

/** Seal and open one purpose's secrets. */
export interface SecretBox {
  /** false without SECRETS_KEYRING: nothing can be sealed */
  readonly canSeal: boolean;
  /** the id new values are sealed under */
  readonly currentKeyId: string | null;
  seal(plaintext: string): string;
  /** throws SecretUnreadable naming what is missing */
  open(sealed: string): string;
  /** the key id a sealed value names (LEGACY_KEY_ID for the pre-ring form) */
  keyIdOf(sealed: string): string;
}

const boxes = new WeakMap<object, Map<string, SecretBox>>();

/** What a service's ring is configured from. */
export type RingConfig = Pick<Config, 'SECRETS_KEYRING' | 'AUTH_SECRET'> & Partial<Pick<Config, 'SECRETS_SUBKEYS' | 'TOTP_ENCRYPTION_KEY'>>;

/** The box of `<service>/<purpose>` for this configuration (subkeys derived once per process). */
export function secretBox(config: RingConfig, service: string, purpose: string): SecretBox {
  let perConfig = boxes.get(config);
  if (!perConfig) boxes.set(config, (perConfig = new Map()));
  const name = `${service}/${purpose}`;
  let box = perConfig.get(name);
  if (!box) perConfig.set(name, (box = subkeyBox(purposeRing(config, name), name, config.TOTP_ENCRYPTION_KEY, ringVariable(config))));
  return box;
}

/** The variable the ring comes from, for messages. */
const ringVariable = (config: RingConfig): string => (!config.SECRETS_KEYRING && config.SECRETS_SUBKEYS ? 'SECRETS_SUBKEYS' : 'SECRETS_KEYRING');

/**
 * The subkeys of one `<service>/<purpose>`, current first: derived from SECRETS_KEYRING when it is set
 * (it wins), else taken as given from the derived ring SECRETS_SUBKEYS; then the key derived from
 * AUTH_SECRET, which seals only when neither is configured.
 */
export function purposeRing(config: RingConfig, purpose: string): RingKey[] {
  const ring: RingKey[] = config.SECRETS_KEYRING
    ? config.SECRETS_KEYRING.map((k) => ({ id: k.id, key: deriveSubkey(k.key, purpose) }))
    : (config.SECRETS_SUBKEYS ?? []).filter((k) => k.purpose === purpose).map((k) => ({ id: k.id, key: k.key }));
  if (config.AUTH_SECRET) ring.push({ id: AUTH_SECRET_KEY_ID, key: deriveSubkey(authSecretRingKey(config.AUTH_SECRET), purpose) });
  return ring;
}

/** The ring key of an installation without SECRETS_KEYRING. */
const authSecretRingKey = (authSecret: string): Buffer => Buffer.from(hkdfSync('sha256', authSecret, 'tasksvc-keyring-fallback', 'SECRETS_KEYRING', 32));

/** A box over master ring keys: derives `info`'s subkeys (tests, and what secretBox does with SECRETS_KEYRING). */
export function createSecretBox(ring: RingKey[], info: string, legacyKeyHex?: string): SecretBox {
  return subkeyBox(
    ring.map((k) => ({ id: k.id, key: deriveSubkey(k.key, info) })),
    info,
    legacyKeyHex,
  );
}

/**
 * A box over already-derived subkeys (current first). `legacyKeyHex`: TOTP_ENCRYPTION_KEY, to open
 * values sealed before the ring existed (the upgrade path). `variable` names the ring in messages.
 */
export function subkeyBox(ring: RingKey[], info: string, legacyKeyHex?: string, variable = 'SECRETS_KEYRING'): SecretBox {
  const subkeys = new Map(ring.map((k) => [k.id, k.key]));
  const current = ring[0];
  const aad = Buffer.from(info);
  const keyIdOf = (sealed: string) => (sealed.startsWith(`${PREFIX}:`) ? sealed.split(':')[1]! : LEGACY_KEY_ID);
  return {
    canSeal: current !== undefined,
    currentKeyId: current?.id ?? null,
    keyIdOf,
    seal(plaintext) {
      if (!current) throw new Error(`${variable} is not set`);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', subkeys.get(current.id)!, iv);
      cipher.setAAD(aad);
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${PREFIX}:${current.id}:${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${ct.toString('base64')}`;
    },
    open(sealed) {
      const id = keyIdOf(sealed);
      if (id === LEGACY_KEY_ID) {
        if (!legacyKeyHex) throw new SecretUnreadable('it was stored before SECRETS_KEYRING existed and TOTP_ENCRYPTION_KEY, which sealed it, is not set', id);
        try {
          return decryptSecret(legacyKeyHex, sealed);
        } catch {
          throw new SecretUnreadable('it was stored before SECRETS_KEYRING existed and TOTP_ENCRYPTION_KEY was changed since', id);
        }
      }
      const key = subkeys.get(id);
      if (!key) throw new SecretUnreadable(`it is sealed under key "${id}", which ${variable} no longer lists`, id);
      const [, , iv, tag, ct] = sealed.split(':');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv!, 'base64'));
        decipher.setAAD(aad);
        decipher.setAuthTag(Buffer.from(tag!, 'base64'));
        return Buffer.concat([decipher.update(Buffer.from(ct ?? '', 'base64')), decipher.final()]).toString('utf8');
      } catch {
        if (id === AUTH_SECRET_KEY_ID) throw new SecretUnreadable('it was sealed under a key derived from AUTH_SECRET, which was changed since (SECRETS_KEYRING keeps these secrets apart from AUTH_SECRET)', id);
        throw new SecretUnreadable(`key "${id}" in ${variable} is not the key it was sealed under`, id);
      }
    },
  };
}

export interface SealedColumn {
  /** schema-qualified table, e.g. `webhook.endpoints` */
  table: string;
  idColumn: string;
  column: string;
}

export interface ResealReport {
  /** values re-sealed under the current key */
  resealed: number;
  /** values no key opens (reported, left as they are) */
  unreadable: number;
  /** values per key id after the run */
  byKey: Record<string, number>;
}

/**
 * Re-seal every value of a column that is not under the ring's current key (older ring keys and the
 * pre-ring form), in batches; a row changed meanwhile is left to the next run. After a run with no
 * unreadable values, the older keys can leave SECRETS_KEYRING (docs/upgrading.md#rotating-keys).
 */
export async function resealColumn(db: Queryable, col: SealedColumn, box: SecretBox, batch = 200): Promise<ResealReport> {
  const report: ResealReport = { resealed: 0, unreadable: 0, byKey: {} };
  if (!box.canSeal) return { ...report, byKey: await sealedByKey(db, col) };
  const current = `${PREFIX}:${box.currentKeyId}:%`;
  let after = '';
  for (;;) {
    const { rows } = await db.query<{ id: string; value: string }>(
      `SELECT ${col.idColumn}::text AS id, ${col.column} AS value FROM ${col.table}
        WHERE ${col.column} IS NOT NULL AND ${col.column} NOT LIKE $1 AND ${col.idColumn}::text > $2
        ORDER BY ${col.idColumn}::text LIMIT ${batch}`,
      [current, after],
    );
    for (const r of rows) {
      let plain: string;
      try {
        plain = box.open(r.value);
      } catch (err) {
        if (!(err instanceof SecretUnreadable)) throw err;
        report.unreadable++;
        continue;
      }
      const res = await db.query(`UPDATE ${col.table} SET ${col.column} = $1 WHERE ${col.idColumn}::text = $2 AND ${col.column} = $3`, [box.seal(plain), r.id, r.value]);
      report.resealed += res.rowCount ?? 0;
    }
    if (rows.length < batch) break;
    after = rows[rows.length - 1]!.id;
  }
  return { ...report, byKey: await sealedByKey(db, col) };
}

/** How many stored values name each key id (LEGACY_KEY_ID: the pre-ring form). */
export async function sealedByKey(db: Queryable, col: SealedColumn): Promise<Record<string, number>> {
  const { rows } = await db.query<{ key: string; n: number }>(
    `SELECT CASE WHEN ${col.column} LIKE '${PREFIX}:%' THEN split_part(${col.column}, ':', 2) ELSE '${LEGACY_KEY_ID}' END AS key, count(*)::int AS n
       FROM ${col.table} WHERE ${col.column} IS NOT NULL GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.n]));
}

/**
 * At a service's start: re-seal in the background what is not under the current key (the lazy half of
 * a rotation; `node tools/keys.ts reseal` is the command). Resolves with the report (tests wait on it).
 */
export function resealInBackground(deps: { pool: Queryable; log: Logger }, col: SealedColumn, box: SecretBox): Promise<ResealReport | null> {
  return detached(() =>
    resealColumn(deps.pool, col, box).then(
      (report) => {
        if (report.resealed > 0) deps.log.info({ table: col.table, ...report }, 'secrets re-sealed under the current SECRETS_KEYRING key');
        if (report.unreadable > 0) deps.log.warn({ table: col.table, ...report }, 'stored secrets no configured key opens: their owners must set them again (docs/upgrading.md#rotating-keys)');
        return report;
      },
      (err: unknown) => {
        deps.log.warn({ err, table: col.table }, 're-sealing secrets failed; run `node tools/keys.ts reseal`');
        return null;
      },
    ),
  );
}
