/**
 * `node tools/keys.ts status|reseal`: the stored secrets sealed under SECRETS_KEYRING, per key id
 * (docs/upgrading.md#rotating-keys). `status` counts them; `reseal` re-seals every value not under the
 * ring's current key (the services also do this at each start) and then counts. A key may leave the
 * ring once no value names it. Reads DATABASE_URL, SECRETS_KEYRING and (for values stored before the
 * ring existed) TOTP_ENCRYPTION_KEY from the environment. Exit code 1 when a value no key opens remains.
 */
import { createLogger, createPool, exitOnConfigError, loadConfig, resealColumn, sealedByKey, type Config, type ResealReport } from '@tasksvc/runtime';
import { channelSecrets, SEALED_CHANNEL_SECRETS } from '@tasksvc/notifier';
import { SEALED_SIGNING_SECRETS, signingSecrets } from '@tasksvc/webhook';

const command = process.argv[2];
if (command !== 'status' && command !== 'reseal') {
  process.stderr.write('usage: node tools/keys.ts status|reseal\n');
  process.exit(2);
}

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  exitOnConfigError(err, 'keys');
}
const pool = createPool(config.DATABASE_URL, createLogger('keys', 'warn'), { max: 1 });
const sealed = [
  { column: SEALED_SIGNING_SECRETS, box: signingSecrets(config) },
  { column: SEALED_CHANNEL_SECRETS, box: channelSecrets(config) },
];
let unreadable = 0;
try {
  for (const { column, box } of sealed) {
    const report: ResealReport = command === 'reseal' ? await resealColumn(pool, column, box) : { resealed: 0, unreadable: 0, byKey: await sealedByKey(pool, column) };
    const byKey = Object.entries(report.byKey).map(([id, n]) => `${id}: ${n}`).join(', ') || 'none stored';
    process.stdout.write(`${column.table}.${column.column}: ${byKey}${command === 'reseal' ? ` (re-sealed ${report.resealed}, unreadable ${report.unreadable})` : ''}\n`);
    unreadable += report.unreadable;
  }
  process.stdout.write(`current key: ${signingSecrets(config).currentKeyId}${config.SECRETS_KEYRING ? '' : ' (SECRETS_KEYRING is not set: a key derived from AUTH_SECRET)'}\n`);
} finally {
  await pool.end();
}
process.exit(unreadable > 0 ? 1 : 0);
