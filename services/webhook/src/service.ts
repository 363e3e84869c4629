import type { ServiceDefinition } from '@tasksvc/runtime';

export const webhookService: ServiceDefinition = {
  name: 'webhook',
  migrations: { schema: 'webhook', dir: new URL('../migrations', import.meta.url).pathname },
  async start() {
    return { async stop() {} };
  },
};
