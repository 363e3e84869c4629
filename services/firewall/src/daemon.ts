// Core daemon wiring: config -> core -> socket -> signals.
import type { Logger } from 'pino';
import type { FirewallConfig } from './config.ts';
import { FirewallCore } from './core.ts';
import { socketGroup } from './env.ts';
import { listenSocket } from './socket.ts';

export async function runCore(config: FirewallConfig, configFile: string, logger: Logger): Promise<void> {
  if (process.getuid?.() !== 0) logger.warn('core daemon is not running as root; nftables calls will fail');
  const core = new FirewallCore({ config, configFile, logger });
  core.start();
  const server = await listenSocket(core, { path: config.socket_path, group: socketGroup() });
  logger.info({ socket: config.socket_path, status: core.status() }, 'firewall core ready');
  process.on('SIGHUP', () => {
    const r = core.reload('signal');
    if (r.ok) logger.info('configuration reloaded');
  });
  const stop = () => {
    core.shutdown();
    server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
