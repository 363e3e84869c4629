import { resolveIdentityRpc } from '@tasksvc/proto';
import type { ServiceDefinition } from '@tasksvc/runtime';

export const authService: ServiceDefinition = {
  name: 'auth',
  migrations: { schema: 'auth', dir: new URL('../migrations', import.meta.url).pathname },
  async start({ bus }) {
    // Until sign-in lands every caller is anonymous: no unauthenticated path reaches user data.
    const identity = bus.serve(resolveIdentityRpc, async () => null);
    return {
      async stop() {
        await identity.stop();
      },
    };
  },
};
