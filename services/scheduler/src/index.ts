export { schedulerService, HEALTH_CRON_JOB } from './service.ts';
