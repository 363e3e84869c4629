/**
 * One operator replica: health endpoints and Prometheus metrics (every replica), leader election, and
 * the controller (leader only). `main.ts` runs it from the environment; tests run it in-process.
 */
import { createServer, type Server } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { DEFAULT_API_TIMEOUT_SECONDS, type OperatorConfig } from './config.ts';
import { startController, type ControllerOptions, type RunningController } from './controller.ts';
import { describeError } from './kube.ts';
import { startLeaderElection, type LeaderElector } from './leader.ts';
import { createOperatorMetrics } from './metrics.ts';

/** What the health endpoints report: is this replica's part working? */
export interface OperatorHealth {
  ok: boolean;
  leader: boolean;
  /** standby (not leading), starting, running, or failed (the last start failed; the Lease was given up) */
  controller: 'standby' | 'starting' | 'running' | 'failed';
  error?: string;
}

export interface RunningOperator {
  isLeader(): boolean;
  health(): OperatorHealth;
  controller(): RunningController | undefined;
  /** the bound health port (useful when configured as 0) */
  healthPort(): number;
  stop(): Promise<void>;
}

export interface OperatorOptions extends Pick<OperatorConfig, 'POD_NAMESPACE' | 'POD_NAME' | 'LEASE_NAME' | 'LEADER_ELECT' | 'LEASE_DURATION_SECONDS' | 'HEALTH_PORT' | 'WORKERS'>, Partial<Pick<OperatorConfig, 'WATCH_NAMESPACES'>> {
  log: Logger;
  /** deadline of an API request in ms (API_TIMEOUT_SECONDS) */
  apiTimeoutMs?: number;
  retryPeriodMs?: number;
  notReadyRecheckMs?: number;
  resyncMs?: number;
  keyCheckMs?: number;
  /** how long a replica that lost the Lease keeps its informers, to resume without re-listing (default: two lease durations) */
  keepInformersMs?: number;
  /** the gateways' /api/health for the Database condition (main.ts: fetchGatewayHealth inside the cluster); unset: not asked */
  gatewayHealth?: ControllerOptions['gatewayHealth'];
  databaseCheckMs?: number;
}

export async function runOperator(kc: KubeConfig, opts: OperatorOptions): Promise<RunningOperator> {
  const { log } = opts;
  const apiTimeoutMs = opts.apiTimeoutMs ?? DEFAULT_API_TIMEOUT_SECONDS * 1000;
  let controller: RunningController | undefined;
  let starting: Promise<void> | undefined;
  let leader = !opts.LEADER_ELECT;
  let state: OperatorHealth['controller'] = 'standby';
  let lastError: string | undefined;
  /** a paused controller after a loss of leadership, kept for keepInformersMs */
  let kept: { controller: RunningController; timer: NodeJS.Timeout } | undefined;
  const keepInformersMs = opts.keepInformersMs ?? 2 * opts.LEASE_DURATION_SECONDS * 1000;
  const dropKept = async () => {
    const k = kept;
    kept = undefined;
    if (!k) return;
    clearTimeout(k.timer);
    await k.controller.stop();
  };
  const metrics = createOperatorMetrics({ leader: () => health().leader, queueDepth: () => controller?.queue.length ?? 0 });

  // A failed start rejects: the elector then gives the Lease up (see leader.ts), and without
  // election the caller sees the error (main.ts exits).
  const startLeading = async () => {
    leader = true;
    state = 'starting';
    starting = (async () => {
      if (kept) {
        // leadership back within moments: the informers' caches are still current
        clearTimeout(kept.timer);
        controller = kept.controller;
        kept = undefined;
        controller.resume();
        state = 'running';
        lastError = undefined;
        return;
      }
      try {
        controller = await startController(kc, { log, apiTimeoutMs, workers: opts.WORKERS, notReadyRecheckMs: opts.notReadyRecheckMs, resyncMs: opts.resyncMs, keyCheckMs: opts.keyCheckMs, gatewayHealth: opts.gatewayHealth, databaseCheckMs: opts.databaseCheckMs, namespaces: opts.WATCH_NAMESPACES, onReconciled: (outcome, seconds) => metrics.reconciled(outcome, seconds) });
        state = 'running';
        lastError = undefined;
      } catch (err) {
        state = 'failed';
        lastError = describeError(err);
        log.error({ err: lastError }, 'controller failed to start');
        throw err;
      }
    })();
    await starting;
  };
  const stopLeading = async () => {
    leader = false;
    if (state !== 'failed') state = 'standby';
    await starting?.catch(() => undefined);
    const c = controller;
    controller = undefined;
    if (!c) return;
    // Stop reconciling at once (another replica may lead now) but keep the informers a while: a
    // short loss (API latency) then costs no re-list of every kind.
    await c.pause();
    await dropKept();
    kept = { controller: c, timer: setTimeout(() => void dropKept().catch((err: unknown) => log.warn({ err: describeError(err) }, 'stopping the kept controller failed')), keepInformersMs) };
  };

  // A standby is healthy; a leader only while its controller runs and its watches work. A replica
  // whose last start failed reports it until it leads successfully (liveness then restarts it).
  const health = (): OperatorHealth => {
    const problem = state === 'running' ? controller?.problem() : state === 'failed' ? lastError : undefined;
    return { ok: problem === undefined, leader: leader && state === 'running', controller: state, ...(problem ? { error: problem } : {}) };
  };

  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.split('?')[0] === '/metrics') {
      metrics.registry.metrics().then(
        (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics collection failed: ${(err as Error).message}\n`),
      );
      return;
    }
    if (req.url !== '/healthz' && req.url !== '/readyz') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not found' }));
      return;
    }
    const h = health();
    res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: h.ok ? 'ok' : 'failing', ...h }));
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
      apiTimeoutMs,
      log,
      onStartedLeading: startLeading,
      onStoppedLeading: stopLeading,
    });
  } else {
    await startLeading();
  }

  return {
    isLeader: () => leader && controller !== undefined,
    health,
    controller: () => controller,
    healthPort: () => {
      const a = server.address();
      return typeof a === 'object' && a ? a.port : 0;
    },
    async stop() {
      if (elector) await elector.stop();
      else await stopLeading();
      await dropKept();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
