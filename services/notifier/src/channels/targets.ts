import type { NotificationChannelType } from '@tasksvc/proto';
import { secretBox, SecretUnreadable, type Config, type SealedColumn, type SecretBox } from '@tasksvc/runtime';
import { listChannels, type ChannelRow } from '../db/store.ts';
import type { SenderDeps, Target } from './channel.ts';
import { channelAvailable, channels } from './index.ts';

/** Channel secrets are sealed under SECRETS_KEYRING (keyring.ts), never under TOTP_ENCRYPTION_KEY. */
export function channelSecrets(config: Config): SecretBox {
  return secretBox(config, 'notifier', 'channel-secrets');
}

/** Where channel secrets are kept (re-sealed after a SECRETS_KEYRING rotation). */
export const SEALED_CHANNEL_SECRETS: SealedColumn = { table: 'notifier.channels', idColumn: "(user_id::text || '/' || type)", column: 'secrets_enc' };

/** Stored secrets, decrypted; a key problem becomes a permanent failure with a clear reason. */
export function readSecrets(config: Config, row: ChannelRow): Record<string, string> | { error: string } {
  if (!row.secretsEnc) return {};
  try {
    return JSON.parse(channelSecrets(config).open(row.secretsEnc)) as Record<string, string>;
  } catch (err) {
    if (!(err instanceof SecretUnreadable)) throw err;
    return { error: `channel secrets cannot be decrypted: ${err.message}; save the channel again` };
  }
}

/**
 * Every target of a user's channels. `onlyType` selects one channel (the test endpoint, which also
 * reaches a disabled channel); otherwise only enabled, available channels count. A channel still
 * waiting (an unconfirmed e-mail address) has none.
 */
export async function targetsFor(deps: SenderDeps, userId: string, onlyType?: NotificationChannelType): Promise<Target[]> {
  const rows = (await listChannels(deps.pool, userId)).filter(
    (r) => (onlyType ? r.type === onlyType : r.enabled) && channelAvailable(deps.config, r.type) && !channels[r.type].waiting?.(r),
  );
  const out: Target[] = [];
  for (const row of rows) {
    const secrets = readSecrets(deps.config, row);
    const unreadable = 'error' in secrets && typeof secrets.error === 'string' ? secrets.error : null;
    for (const target of await channels[row.type].targets(deps, { userId, config: row.config, secrets: unreadable ? {} : secrets })) {
      // Secrets that cannot be decrypted fail every send with the reason, rather than sending without them.
      out.push(unreadable ? { ...target, send: async () => ({ kind: 'failed', error: unreadable }) } : target);
    }
  }
  return out;
}
