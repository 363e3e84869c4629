/**
 * One operator replica: health endpoints (every replica), leader election, and the controller
 * (leader only). `main.ts` runs it from the environment; tests run it in-process.
 */
import { createServer, type Server } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { OperatorConfig } from './config.ts';
import { startController, type RunningController } from './controller.ts';
import { startLeaderElection, type LeaderElector } from './leader.ts';

export interface RunningOperator {
  isLeader(): boolean;
  controller(): RunningController | undefined;
  /** the bound health port (useful when configured as 0) */
  healthPort(): number;
  stop(): Promise<void>;
}

export interface OperatorOptions extends Pick<OperatorConfig, 'POD_NAMESPACE' | 'POD_NAME' | 'LEASE_NAME' | 'LEADER_ELECT' | 'LEASE_DURATION_SECONDS' | 'HEALTH_PORT' | 'WORKERS'> {
  log: Logger;
  retryPeriodMs?: number;
  notReadyRecheckMs?: number;
  resyncMs?: number;
}

export async function runOperator(kc: KubeConfig, opts: OperatorOptions): Promise<RunningOperator> {
  const { log } = opts;
  let controller: RunningController | undefined;
  let starting: Promise<void> | undefined;
  let leader = !opts.LEADER_ELECT;

  const startLeading = async () => {
    leader = true;
    starting = (async () => {
      try {
        controller = await startController(kc, { log, workers: opts.WORKERS, notReadyRecheckMs: opts.notReadyRecheckMs, resyncMs: opts.resyncMs });
      } catch (err) {
        // Without a controller this replica is useless as leader: exit and let Kubernetes restart it.
        log.fatal({ err }, 'controller failed to start');
        process.exitCode = 1;
        throw err;
      }
    })();
    await starting;
  };
  const stopLeading = async () => {
    leader = false;
    await starting?.catch(() => undefined);
    const c = controller;
    controller = undefined;
    await c?.stop();
  };

  const server: Server = createServer((req, res) => {
    // Liveness: the process answers. Readiness: the same (a standby replica is healthy, not broken).
    const ok = req.url === '/healthz' || req.url === '/readyz';
    res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { status: 'ok', leader } : { error: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(opts.HEALTH_PORT, resolve));

  let elector: LeaderElector | undefined;
  if (opts.LEADER_ELECT) {
    elector = startLeaderElection(kc, {
      namespace: opts.POD_NAMESPACE,
      name: opts.LEASE_NAME,
      identity: opts.POD_NAME,
      leaseDurationSeconds: opts.LEASE_DURATION_SECONDS,
      retryPeriodMs: opts.retryPeriodMs,
      log,
      onStartedLeading: startLeading,
      onStoppedLeading: stopLeading,
    });
  } else {
    await startLeading();
  }

  return {
    isLeader: () => leader && controller !== undefined,
    controller: () => controller,
    healthPort: () => {
      const a = server.address();
      return typeof a === 'object' && a ? a.port : 0;
    },
    async stop() {
      if (elector) await elector.stop();
      else await stopLeading();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
