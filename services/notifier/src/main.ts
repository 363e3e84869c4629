import { runStandalone } from '@tasksvc/runtime';
import { notifierService } from './service.ts';

await runStandalone(notifierService);
