import type { AnyRoute } from '@tasksvc/proto';
import type { Bus, Config, Logger, Pool } from '@tasksvc/runtime';
import type { FastifyInstance } from 'fastify';

/**
 * What the gateway is built from. It lives apart from app.ts so the route modules that take it
 * (pages, cron, auth proxy, OpenAPI…) import a leaf instead of the file that imports them.
 */
export interface GatewayDeps {
  config: Config;
  bus: Bus;
  /** used only to report database reachability in /api/health */
  pool: Pool;
  log: Logger;
  routes?: AnyRoute[];
  /** folder of the built UI; served with a single-page-app fallback when present */
  uiDir?: string;
  /** true once the gateway is stopping (GET /readyz then answers 503) */
  draining?: () => boolean;
}

/** A gateway route area that is not a plain forwarded JSON route; listed in extensions.ts. */
export type GatewayExtension = (app: FastifyInstance, deps: GatewayDeps) => void | Promise<void>;
