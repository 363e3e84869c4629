/**
 * `node tools/keys.ts status|reseal|derive` (docs/upgrading.md#rotating-keys).
 *
 * - `status` counts the stored secrets sealed under the key ring, per table and key id;
 * - `reseal` re-seals every value not under the ring's current key (the services also do this at each
 *   start) and then counts. A key may leave the ring once no value names it;
 * - `derive` prints each ring service's derived ring (SECRETS_SUBKEYS) from SECRETS_KEYRING, as .env
 *   lines for compose (`WEBHOOK_SECRETS_SUBKEYS=…`, `NOTIFIER_SECRETS_SUBKEYS=…`); no database.
 *
 * status/reseal read DATABASE_URL, the ring and (for values stored before the ring existed)
 * TOTP_ENCRYPTION_KEY. The ring is the master SECRETS_KEYRING (every service's tables) or one service's
 * derived ring SECRETS_SUBKEYS (that service's tables only; the others are listed as skipped). Exit code
 * 1 when a value no key opens remains.
 */
import { createLogger, createPool, exitOnConfigError, LEGACY_KEY_ID, loadConfig, parseKeyRing, parseSubkeys, resealColumn, sealedByKey, type Config, type ResealReport } from '@tasksvc/runtime';
import { deriveSubkeys, RING_SERVICES } from '@tasksvc/proto/ring-keys.ts';
import { channelSecrets, SEALED_CHANNEL_SECRETS } from '@tasksvc/notifier';
import { SEALED_SIGNING_SECRETS, signingSecrets } from '@tasksvc/webhook';

const command = process.argv[2];
if (command !== 'status' && command !== 'reseal' && command !== 'derive') {
  process.stderr.write('usage: node tools/keys.ts status|reseal|derive\n');
  process.exit(2);
}

if (command === 'derive') {
  const ring = parseKeyRing(process.env.SECRETS_KEYRING ?? '');
  if (typeof ring === 'string') {
    process.stderr.write(`SECRETS_KEYRING: ${ring}\n`);
    process.exit(2);
  }
  for (const service of RING_SERVICES) process.stdout.write(`${service.toUpperCase()}_SECRETS_SUBKEYS=${deriveSubkeys(ring, service)}\n`);
  process.exit(0);
}

// Read as a ring service does (no AUTH_SECRET needed): as the service a derived ring belongs to, else
// as the webhook service (both declare the same ring variables), which refuses a derived ring of two.
const subkeys = parseSubkeys(process.env.SECRETS_SUBKEYS ?? '');
const scope = typeof subkeys !== 'string' && subkeys.every((k) => k.purpose.startsWith('notifier/')) ? 'notifier' : 'webhook';
let config: Config;
try {
  config = loadConfig(process.env, scope);
} catch (err) {
  exitOnConfigError(err, 'keys');
}
const pool = createPool(config.DATABASE_URL, createLogger('keys', 'warn'), { max: 1 });
const sealed = [
  { column: SEALED_SIGNING_SECRETS, purpose: 'webhook/endpoint-secret', box: signingSecrets(config) },
  { column: SEALED_CHANNEL_SECRETS, purpose: 'notifier/channel-secrets', box: channelSecrets(config) },
];
// A derived ring holds one service's purposes: the other service's tables are not this ring's to touch.
const held = (purpose: string) => Boolean(config.SECRETS_KEYRING) || !config.SECRETS_SUBKEYS || config.SECRETS_SUBKEYS.some((k) => k.purpose === purpose);
let unreadable = 0;
/** values still in the pre-ring form (sealed under TOTP_ENCRYPTION_KEY), in the tables this ring covers */
let legacy = 0;
try {
  for (const { column, purpose, box } of sealed) {
    const name = `${column.table}.${column.column}`;
    if (!held(purpose)) {
      process.stdout.write(`${name}: skipped (SECRETS_SUBKEYS holds no key for ${purpose}: run with that service's derived ring or SECRETS_KEYRING)\n`);
      continue;
    }
    const report: ResealReport = command === 'reseal' ? await resealColumn(pool, column, box) : { resealed: 0, unreadable: 0, byKey: await sealedByKey(pool, column) };
    const byKey = Object.entries(report.byKey).map(([id, n]) => `${id}: ${n}`).join(', ') || 'none stored';
    process.stdout.write(`${name}: ${byKey}${command === 'reseal' ? ` (re-sealed ${report.resealed}, unreadable ${report.unreadable})` : ''}\n`);
    unreadable += report.unreadable;
    legacy += report.byKey[LEGACY_KEY_ID] ?? 0;
  }
  // The record an admin needs before taking TOTP_ENCRYPTION_KEY away from the ring services (docs/upgrading.md).
  process.stdout.write(
    legacy
      ? `pre-ring values: ${legacy} (under TOTP_ENCRYPTION_KEY: keep it for the webhook and notifier services until a re-seal moves them)\n`
      : sealed.every((c) => held(c.purpose))
        ? 'pre-ring values: none (the webhook and notifier services no longer need TOTP_ENCRYPTION_KEY)\n'
        : 'pre-ring values: none in the table counted (run with SECRETS_KEYRING to count both services)\n',
  );
  const current = sealed.find((s) => held(s.purpose))!.box.currentKeyId;
  const source = config.SECRETS_KEYRING ? '' : config.SECRETS_SUBKEYS ? ' (from SECRETS_SUBKEYS, a derived ring)' : ' (SECRETS_KEYRING is not set: a key derived from AUTH_SECRET)';
  process.stdout.write(`current key: ${current}${source}\n`);
} finally {
  await pool.end();
}
process.exit(unreadable > 0 ? 1 : 0);
