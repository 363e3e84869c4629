import { pushoverMessage } from '../domain/messages.ts';
import { num, sendHttp, single, str, type Channel } from './channel.ts';

/** Delivers to the Pushover app through PUSHOVER_API_URL. */
export const pushover: Channel = {
  secretFields: ['appToken', 'userKey'],
  requiredSecrets: ['appToken', 'userKey'],
  targets: ({ config: env, outbound }, { config, secrets }) =>
    single('pushover', (n) =>
      sendHttp(outbound, pushoverMessage(env.PUSHOVER_API_URL, { appToken: secrets.appToken!, userKey: secrets.userKey!, device: str(config.device), priority: num(config.priority) }, n, env.PUBLIC_APP_URL)),
    ),
};
