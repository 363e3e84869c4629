/**
 * `npm start`: the whole system in one process on http://localhost:3000 (or PORT). Uses DATABASE_URL
 * and NATS_URL when given; otherwise an embedded PostgreSQL in the data folder and the in-process
 * bus. In development it also runs the development sign-in and its own cron timer.
 */
import { configWarnings, createLogger, exitOnConfigError, loadConfig, onShutdown, prettyLogs, rawEnv, startMemoryTrim, startTracing, tuneGarbageCollection, type Config } from '@tasksvc/runtime';
import { applyDevDefaults } from './dev-defaults.ts';
import { exposedDevSignInWarning, startDevSignIn, type DevSignIn } from './dev-signin.ts';
import { startEmbeddedCron } from './embedded-cron.ts';
import { startSystem } from './system.ts';

const t0 = Date.now();
tuneGarbageCollection();
const raw = rawEnv();
const pretty = prettyLogs({ RUNTIME_ENV: raw.RUNTIME_ENV || 'development' });
const bootLog = createLogger('start', raw.LOG_LEVEL || 'info', { pretty });
const { env, postgres } = await applyDevDefaults(raw, bootLog);
let config: Config;
try {
  config = loadConfig(env);
} catch (err) {
  await postgres?.stop();
  exitOnConfigError(err, 'task-service');
}
for (const warning of configWarnings(config)) bootLog.warn(warning);

let devSignIn: DevSignIn | undefined;
if (config.DEV_SIGNIN) {
  devSignIn = await startDevSignIn(config, bootLog);
  config = { ...config, devSignIn };
  bootLog.warn(
    { issuer: devSignIn.issuer },
    'DEVELOPMENT SIGN-IN IS ON: anyone who can open the login page can sign in as any name and e-mail. It is off in production and once a real provider is configured (DEV_SIGNIN=false turns it off, DEV_SIGNIN=true keeps it next to real providers).',
  );
  const exposed = exposedDevSignInWarning(config.HOST);
  if (exposed) bootLog.warn({ host: config.HOST }, exposed);
}

// the boot warnings go out before the system's own lines (the log goes out in chunks, runtime/logger.ts)
bootLog.flush();

// one process, one service name for its spans (the span names say which service did what)
const tracing = await startTracing(config, 'task-service');
const system = await startSystem(config, { log: createLogger('task-service', config.LOG_LEVEL, { pretty }) });
const cron = startEmbeddedCron(system.bus, system.log);
const signIn = devSignIn ? 'sign in with "Development sign-in" (any name and e-mail)' : 'sign in with a configured provider or a passkey';
system.log.info({ url: config.PUBLIC_APP_URL, port: config.PORT, bus: system.bus.kind, ms: Date.now() - t0 }, `Task Service is up: open ${config.PUBLIC_APP_URL} and ${signIn}`);
// the log goes out in chunks (runtime/logger.ts); the line that says where to open the app goes now
system.log.flush();
const stopTrim = startMemoryTrim(system.log);
onShutdown(system.log, async () => {
  stopTrim();
  await cron.stop();
  await system.stop();
  await devSignIn?.stop();
  await postgres?.stop();
  await tracing?.shutdown();
}, config);
