export { webhookService } from './service.ts';
export { signingSecrets, SEALED_SIGNING_SECRETS } from './worker.ts';
