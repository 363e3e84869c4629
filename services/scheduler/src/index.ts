export { schedulerService, createSchedulerService, HEALTH_CRON_JOB, type SchedulerOptions } from './service.ts';
