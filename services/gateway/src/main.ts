import { runStandalone } from '@tasksvc/runtime';
import { gatewayService } from './service.ts';

await runStandalone(gatewayService);
