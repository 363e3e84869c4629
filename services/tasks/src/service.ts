import type { ServiceDefinition } from '@tasksvc/runtime';

export const tasksService: ServiceDefinition = {
  name: 'tasks',
  migrations: { schema: 'tasks', dir: new URL('../migrations', import.meta.url).pathname },
  async start() {
    return { async stop() {} };
  },
};
