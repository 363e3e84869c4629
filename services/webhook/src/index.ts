export { webhookService } from './service.ts';
