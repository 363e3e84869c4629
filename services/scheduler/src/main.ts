import { runStandalone } from '@tasksvc/runtime';
import { schedulerService } from './service.ts';

await runStandalone(schedulerService);
