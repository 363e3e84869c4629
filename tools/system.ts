import { authService } from '@tasksvc/auth';
import { gatewayService } from '@tasksvc/gateway';
import { notifierService } from '@tasksvc/notifier';
import {
  createLogger,
  createMemoryBus,
  createNatsBus,
  natsAuthOptions,
  createPool,
  startService,
  type Bus,
  type Config,
  type Logger,
  type Pool,
  type RunningService,
  type ServiceDefinition,
} from '@tasksvc/runtime';
import { schedulerService } from '@tasksvc/scheduler';
import { tasksService } from '@tasksvc/tasks';
import { webhookService } from '@tasksvc/webhook';

/** Start order: every schema is migrated before the gateway opens the port. */
export const BACKEND_SERVICES: ServiceDefinition[] = [authService, tasksService, notifierService, webhookService, schedulerService];
export const ALL_SERVICES: ServiceDefinition[] = [...BACKEND_SERVICES, gatewayService];

export interface RunningSystem {
  config: Config;
  bus: Bus;
  pool: Pool;
  log: Logger;
  url: string;
  stop(): Promise<void>;
}

/**
 * All six services in one process: NATS when NATS_URL is set, otherwise the in-process bus; one
 * pool shared by all. Used by `npm start` and by integration tests that want the whole system.
 */
export async function startSystem(config: Config, opts: { log?: Logger; services?: ServiceDefinition[] } = {}): Promise<RunningSystem> {
  const log = opts.log ?? createLogger('system', config.LOG_LEVEL);
  const pool = createPool(config.DATABASE_URL, log, { max: 20, application: 'task-service', prepare: config.DATABASE_PREPARED_STATEMENTS });
  const services = opts.services ?? ALL_SERVICES;
  const durables = services.flatMap((s) => s.durables ?? []);
  const bus = config.NATS_URL ? await createNatsBus({ servers: config.NATS_URL, name: 'all-in-one', log, streamReplicas: config.NATS_STREAM_REPLICAS, ...natsAuthOptions(config) }) : createMemoryBus(log, { durables });
  const running: RunningService[] = [];
  try {
    for (const def of services) running.push(await startService(def, { config, bus, pool, log: log.child({ service: def.name }) }));
  } catch (err) {
    for (const r of running.reverse()) await r.stop().catch(() => undefined);
    await bus.close().catch(() => undefined);
    await pool.end().catch(() => undefined);
    throw err;
  }
  return {
    config,
    bus,
    pool,
    log,
    url: `http://127.0.0.1:${config.PORT}`,
    async stop() {
      for (const r of running.reverse()) await r.stop().catch((err: unknown) => log.warn({ err }, 'service stop failed'));
      await bus.close();
      await pool.end();
    },
  };
}
