// Core daemon wiring: preconditions -> config -> core -> socket -> signals.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { FirewallConfig } from './config.ts';
import { statusSummary } from './admin.ts';
import { FirewallCore } from './core.ts';
import { selfConfirmEndpoints, socketGroup, webPort } from './env.ts';
import { sshdPorts } from './host.ts';
import { nftAvailable } from './nft.ts';
import { sdNotify } from './notify.ts';
import { listenSocket } from './socket.ts';

const CAP_NET_ADMIN = 12;

/** Why this process cannot manage nftables, or undefined. */
export function corePrecondition(status = readFileSync('/proc/self/status', 'utf8')): string | undefined {
  const eff = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  if (!eff || !((BigInt(`0x${eff}`) >> BigInt(CAP_NET_ADMIN)) & 1n)) {
    return 'the core daemon needs root (CAP_NET_ADMIN) to manage nftables; run it as root (see deploy/systemd/task-firewall-core.service)';
  }
  if (!nftAvailable()) return 'libnftables.so.1 cannot be loaded: install the Debian package libnftables1';
  return undefined;
}

export async function runCore(config: FirewallConfig, configFile: string, logger: Logger): Promise<void> {
  const refused = corePrecondition();
  if (refused) throw new Error(`refusing to start: ${refused}`);
  const selfConfirm = selfConfirmEndpoints();
  // Type=notify: `systemctl status` shows every change of protection as its Status: line.
  const onChange = (status: Parameters<typeof statusSummary>[0]) => sdNotify({ STATUS: statusSummary(status) });
  const core = new FirewallCore({ config, configFile, logger, selfConfirm, onChange, firstStart: () => ({ sshPorts: sshdPorts(), webPort: webPort() }) });
  core.start();
  const server = await listenSocket(core, { path: config.socket_path, group: socketGroup() });
  const status = core.status();
  logger.info({ socket: config.socket_path, status, self_confirm: selfConfirm }, 'firewall core ready');
  sdNotify({ READY: '1', STATUS: statusSummary(status) });
  process.on('SIGHUP', () => {
    const r = core.reload('signal');
    if (r.ok) logger.info('configuration reloaded');
  });
  const stop = (signal: NodeJS.Signals) => {
    sdNotify({ STOPPING: '1' });
    const kept = core.shutdown(signal);
    logger.warn(`daemon stopped: ${kept}`);
    sdNotify({ STATUS: `stopped: ${kept}` });
    server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
