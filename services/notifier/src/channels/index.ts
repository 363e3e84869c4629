import type { NotificationChannelType } from '@tasksvc/proto';
import type { Config } from '@tasksvc/runtime';
import type { Channel } from './channel.ts';
import { email } from './email.ts';
import { httpAlert } from './http-alert.ts';
import { ntfy } from './ntfy.ts';
import { push } from './push.ts';
import { pushover } from './pushover.ts';
import { telegram } from './telegram.ts';

/** Every channel type of the contract, each with its implementation; a missing one fails the typecheck. */
export const channels: Record<NotificationChannelType, Channel> = {
  push,
  ntfy,
  pushover,
  telegram,
  email,
  'http-alert': httpAlert,
};

/** Operator-side availability: email needs SMTP_HOST, push needs the VAPID key pair. */
export function channelAvailable(config: Config, type: NotificationChannelType): boolean {
  return channels[type].availability?.available(config) ?? true;
}
