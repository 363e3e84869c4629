import type { ServiceDefinition } from '@tasksvc/runtime';

export const notifierService: ServiceDefinition = {
  name: 'notifier',
  migrations: { schema: 'notifier', dir: new URL('../migrations', import.meta.url).pathname },
  async start() {
    return { async stop() {} };
  },
};
