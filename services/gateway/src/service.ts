import type { ServiceDefinition } from '@tasksvc/runtime';
import { buildGateway, DEFAULT_UI_DIR } from './app.ts';

/** The only public listener (port 3000): HTTP in, typed bus requests out. */
export const gatewayService: ServiceDefinition = {
  name: 'gateway',
  // its own schema: the shared per-user rate-limit counters (rate-limit.ts)
  migrations: { schema: 'gateway', dir: new URL('../migrations', import.meta.url).pathname },
  async start(deps) {
    const app = await buildGateway({ ...deps, uiDir: DEFAULT_UI_DIR });
    await app.listen({ port: deps.config.PORT, host: deps.config.HOST });
    return {
      async stop() {
        await app.close();
      },
    };
  },
};
