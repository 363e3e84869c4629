import { signBody } from '@tasksvc/runtime';
import { httpAlertBody } from '../domain/messages.ts';
import { sendHttp, single, str, type Channel } from './channel.ts';

/** POSTs a JSON alert to the user's URL, signed with their secret when they set one. */
export const httpAlert: Channel = {
  secretFields: ['secret'],
  requiredSecrets: [],
  async prepare(config, { checkUrl }) {
    config.url = await checkUrl(String(config.url), 'body.config.url');
  },
  targets: ({ outbound }, { config, secrets }) =>
    single('http-alert', (n) => {
      const body = httpAlertBody(n, new Date());
      const headers: Record<string, string> = { 'content-type': 'application/json', 'X-Service-Event': 'service.notification' };
      if (secrets.secret) headers['X-Service-Signature'] = signBody(secrets.secret, body);
      return sendHttp(outbound, { url: str(config.url)!, method: 'POST', headers, body });
    }),
};
