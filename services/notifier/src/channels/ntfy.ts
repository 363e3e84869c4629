import { ntfyMessage } from '../domain/messages.ts';
import { num, sendHttp, single, str, type Channel } from './channel.ts';

/** Publishes to an ntfy topic (NTFY_DEFAULT_SERVER unless the user names a server). */
export const ntfy: Channel = {
  secretFields: ['token'],
  requiredSecrets: [],
  async prepare(config, { checkUrl }) {
    config.server = config.server ? (await checkUrl(String(config.server), 'body.config.server')).replace(/\/+$/, '') : null;
  },
  targets: ({ config: env, outbound }, { config, secrets }) =>
    single('ntfy', (n) =>
      sendHttp(outbound, ntfyMessage({ server: str(config.server) ?? env.NTFY_DEFAULT_SERVER, topic: str(config.topic)!, priority: num(config.priority), token: secrets.token ?? null }, n, env.PUBLIC_APP_URL)),
    ),
};
