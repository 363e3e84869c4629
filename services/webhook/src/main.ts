import { runStandalone } from '@tasksvc/runtime';
import { webhookService } from './service.ts';

await runStandalone(webhookService);
