import { runStandalone } from '@tasksvc/runtime';
import { authService } from './service.ts';

await runStandalone(authService);
