import { telegramMessage } from '../domain/messages.ts';
import { sendHttp, single, str, type Channel } from './channel.ts';

/** A Telegram bot messages the user's chat through TELEGRAM_API_URL. */
export const telegram: Channel = {
  secretFields: ['botToken'],
  requiredSecrets: ['botToken'],
  targets: ({ config: env, outbound }, { config, secrets }) =>
    single('telegram', (n) => sendHttp(outbound, telegramMessage(env.TELEGRAM_API_URL, { botToken: secrets.botToken!, chatId: str(config.chatId)! }, n, env.PUBLIC_APP_URL))),
};
