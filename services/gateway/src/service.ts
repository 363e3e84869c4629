import type { ServiceDefinition } from '@tasksvc/runtime';
import { buildGateway, DEFAULT_UI_DIR } from './app.ts';

/** The only public listener (port 3000): HTTP in, typed bus requests out. */
export const gatewayService: ServiceDefinition = {
  name: 'gateway',
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
