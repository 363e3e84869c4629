import { hostname } from 'node:os';
import { deadLettersRpc, metricsSummaryRpc, pingRpc, replayDeadLettersRpc, type ServiceFigures, type ServiceName } from '@tasksvc/proto';
import type { Bus, DurableDeclaration, Subscription } from './bus/types.ts';
import { createNatsBus } from './bus/nats.ts';
import { natsAuthOptions } from './nats-auth.ts';
import { ConfigError, configWarnings, loadConfig, scopedConfig, type Config } from './config.ts';
import { createPool, type Pool } from './db/pool.ts';
import { waitForDatabase } from './db/availability.ts';
import { migrate } from './db/migrate.ts';
import { outboxFigures } from './outbox.ts';
import { createDeadLetters } from './dead-letters.ts';
import { startHealthListener } from './health-listener.ts';
import { createLogger, prettyLogs, type Logger } from './logger.ts';
import { detached, startTracing } from './tracing.ts';
import { tuneGarbageCollection } from './gc-tuning.ts';
import { startMemoryTrim } from './memory-trim.ts';
import { STARTED_AT, VERSION } from './version.ts';

/** What every service is given: it never builds these itself, so the same code runs alone or embedded. */
export interface ServiceDeps {
  config: Config;
  bus: Bus;
  pool: Pool;
  log: Logger;
}

export interface RunningService {
  stop(): Promise<void>;
  /** this service's part of the admin page's key figures, read from the process registry (the outbox backlog is added for it) */
  figures?(): Promise<Omit<ServiceFigures, 'outbox'>>;
}

export interface ServiceDefinition {
  name: ServiceName;
  /** this service's own Postgres schema, its folder of `*.sql` migrations and the schemas of the outboxes it relays (tables created by the runtime) */
  migrations?: { schema: string; dir: string; outboxes?: string[] };
  /** the durable consumers `start` registers, so an in-process bus keeps events for them from the first publish */
  durables?: DurableDeclaration[];
  start(deps: ServiceDeps): Promise<RunningService>;
}

/** Migrate (before anything listens), start, and answer `svc.<name>.ping`. */
export async function startService(def: ServiceDefinition, deps: ServiceDeps): Promise<RunningService> {
  const log = deps.log;
  // a service that consumes events parks what it cannot read in a table of its schema (dead-letters.ts)
  const consumes = (def.durables?.length ?? 0) > 0 && def.migrations !== undefined;
  if (def.migrations) await migrate(deps.pool, { ...def.migrations, deadLetters: consumes, log });
  const deadLetters = consumes ? createDeadLetters({ pool: deps.pool, schema: def.migrations!.schema, service: def.name, log }) : undefined;
  // Alone or embedded (`npm start`: one environment for all), a service sees only what it declares.
  const config = scopedConfig(deps.config, def.name);
  const running = await def.start({ ...deps, config, bus: deadLetters ? deadLetters.bus(deps.bus) : deps.bus, log });
  // An upgraded consumer reads what its predecessor parked: each start hands the parked events over once.
  if (deadLetters) detached(() => void deadLetters.replay().catch((err: unknown) => log.warn({ err }, 'replaying parked events failed; replay them from the admin page')));
  const parked: Subscription[] = deadLetters
    ? deadLetters.serve(deps.bus)
    : [deps.bus.serve(deadLettersRpc(def.name), async () => ({ service: def.name, total: 0, events: [] })), deps.bus.serve(replayDeadLettersRpc(def.name), async () => ({ service: def.name, replayed: 0, stillParked: [] }))];
  const instance = `${hostname()}:${process.pid}`;
  const ping: Subscription = deps.bus.serve(pingRpc(def.name), async () => ({
    service: def.name,
    version: VERSION,
    instance,
    uptimeSeconds: Math.round((Date.now() - STARTED_AT) / 1000),
  }));
  // The admin page's figures: asked of every service, answered from this process's registry.
  const outboxes = def.migrations?.outboxes ?? [];
  const figures: Subscription = deps.bus.serve(metricsSummaryRpc(def.name), async () => ({
    service: def.name,
    instance,
    startedAt: new Date(STARTED_AT).toISOString(),
    ...(outboxes.length > 0 ? { outbox: await outboxFigures(outboxes) } : {}),
    ...(await running.figures?.()),
  }));
  await deps.bus.flush();
  log.info({ version: VERSION }, `${def.name} started`);
  return {
    async stop() {
      await ping.stop();
      await figures.stop();
      for (const s of parked) await s.stop();
      await running.stop();
      deadLetters?.close();
    },
  };
}

/** Print a configuration error the way an operator wants to read it, and exit. */
export function exitOnConfigError(err: unknown, service: string): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${service}: refusing to start.\n${err.message}\n`);
    process.exit(1);
  }
  throw err;
}

/**
 * Stop cleanly on SIGTERM/SIGINT (Kubernetes sends SIGTERM before killing a pod). A stop that hangs
 * is cut after 20 s plus the gateway's SHUTDOWN_DELAY_SECONDS, so the delay is never cut short.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>, config: Pick<Config, 'SHUTDOWN_DELAY_SECONDS'>): void {
  const graceMs = 20_000 + config.SHUTDOWN_DELAY_SECONDS * 1000;
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), graceMs);
    force.unref();
    stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => handler('SIGTERM'));
  process.once('SIGINT', () => handler('SIGINT'));
}

/** Entry point of a service running as its own process: NATS bus, its own pool, signals. */
export async function runStandalone(def: ServiceDefinition): Promise<void> {
  tuneGarbageCollection();
  let config: Config;
  try {
    // only this service's variables: another service's missing or bad variable never stops this one
    config = loadConfig(process.env, def.name);
  } catch (err) {
    exitOnConfigError(err, def.name);
  }
  // before the logger (its lines then carry trace ids) and the pool (its statements become spans)
  const tracing = await startTracing(config, def.name);
  const log = createLogger(def.name, config.LOG_LEVEL, { pretty: prettyLogs(config) });
  for (const warning of configWarnings(config)) log.warn(warning);
  if (!config.NATS_URL) {
    process.stderr.write(`${def.name}: refusing to start.\nInvalid configuration:\n  - NATS_URL: is required when a service runs as its own process (e.g. nats://127.0.0.1:4222)\n`);
    process.exit(1);
  }
  // Probes first: a pod that waits for the database or the bus is alive (GET /livez) and says why it
  // is not ready (GET /health), rather than exiting into the kubelet's crash-loop backoff.
  const health = config.HEALTH_PORT ? await startHealthListener(config.HEALTH_PORT, def.name) : undefined;
  const pool = createPool(config.DATABASE_URL, log, { application: def.name, prepare: config.DATABASE_PREPARED_STATEMENTS });
  await waitForDatabase(pool, log, { onWaiting: (reason) => health?.starting(reason) }).catch((err: unknown) => {
    // not an outage (those are waited out) but e.g. a wrong password or database name
    process.stderr.write(`${def.name}: refusing to start.\nDATABASE_URL: the database refused the connection: ${(err as Error).message}\n`);
    process.exit(1);
  });
  health?.starting('connecting to the message bus');
  const bus = await createNatsBus({ servers: config.NATS_URL, name: def.name, log, streamReplicas: config.NATS_STREAM_REPLICAS, ...natsAuthOptions(config) });
  health?.attachBus(bus);
  health?.starting('migrating and subscribing');
  const running = await startService(def, { config, bus, pool, log });
  health?.ready();
  const stopTrim = startMemoryTrim(log);
  onShutdown(
    log,
    async () => {
      stopTrim();
      health?.stopping();
      await running.stop();
      await health?.close();
      await bus.close();
      await pool.end();
      await tracing?.shutdown();
    },
    config,
  );
}
