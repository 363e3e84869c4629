export { notifierService } from './service.ts';
export { channelSecrets, SEALED_CHANNEL_SECRETS } from './channels/targets.ts';
