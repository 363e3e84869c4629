/**
 * `npm start`: the whole system in one process on http://localhost:3000. Uses DATABASE_URL and
 * NATS_URL when given; otherwise an embedded PostgreSQL in the data folder and the in-process bus.
 */
import { configWarnings, createLogger, exitOnConfigError, loadConfig, onShutdown, rawEnv, type Config } from '@tasksvc/runtime';
import { applyDevDefaults } from './dev-defaults.ts';
import { startSystem } from './system.ts';

const t0 = Date.now();
const bootLog = createLogger('start', rawEnv().LOG_LEVEL || 'info');
const { env, postgres } = await applyDevDefaults(rawEnv(), bootLog);
let config: Config;
try {
  config = loadConfig(env);
} catch (err) {
  await postgres?.stop();
  exitOnConfigError(err, 'task-service');
}
for (const warning of configWarnings(config)) bootLog.warn(warning);
const system = await startSystem(config, { log: createLogger('task-service', config.LOG_LEVEL) });
system.log.info({ url: config.PUBLIC_APP_URL, port: config.PORT, bus: system.bus.kind, ms: Date.now() - t0 }, `Task Service is up on port ${config.PORT}`);
onShutdown(system.log, async () => {
  await system.stop();
  await postgres?.stop();
});
