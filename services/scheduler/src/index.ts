export { schedulerService, createSchedulerService, type SchedulerOptions } from './service.ts';
export { HEALTH_CRON_JOB } from './status.ts';
