import type { FastifyInstance } from 'fastify';
import type { GatewayDeps } from './app.ts';
import { registerAuthProxy } from './auth-proxy.ts';
import { registerPageGates } from './page-gates.ts';
import { registerPages } from './pages.ts';
import { registerCron } from './cron.ts';
import { registerOpenApi } from './openapi.ts';

/**
 * Gateway routes that are not plain forwarded JSON routes (the Auth.js proxy, the cron trigger,
 * server-rendered pages, the OpenAPI document). Each area adds its registration function here.
 */
export type GatewayExtension = (app: FastifyInstance, deps: GatewayDeps) => void | Promise<void>;

export const extensions: GatewayExtension[] = [
  registerAuthProxy,
  registerPageGates,
  registerPages,
  registerCron,
  registerOpenApi,
];
