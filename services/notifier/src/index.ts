export { notifierService } from './service.ts';
