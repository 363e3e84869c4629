import type { GatewayExtension } from './deps.ts';
import { registerAuthProxy } from './auth-proxy.ts';
import { registerPageGates } from './page-gates.ts';
import { registerPages } from './pages.ts';
import { registerCron } from './cron.ts';
import { registerOpenApi } from './openapi.ts';
import { registerCaldav } from './caldav.ts';
import { registerUserExport } from './user-export.ts';

/**
 * Gateway routes that are not plain forwarded JSON routes (the Auth.js proxy, the cron trigger,
 * server-rendered pages, the OpenAPI document). Each area adds its registration function here.
 */
export const extensions: GatewayExtension[] = [
  registerAuthProxy,
  registerPageGates,
  registerPages,
  registerCron,
  registerOpenApi,
  registerCaldav,
  registerUserExport,
];
