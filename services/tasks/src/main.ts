import { runStandalone } from '@tasksvc/runtime';
import { tasksService } from './service.ts';

await runStandalone(tasksService);
