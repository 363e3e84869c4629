/** Entry point of the operator container: `node operator/src/main.ts`. */
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { loadOperatorConfig } from './config.ts';
import { runOperator } from './operator.ts';
import { fetchGatewayHealth } from './reconciler.ts';

let config;
try {
  config = loadOperatorConfig();
} catch (err) {
  process.stderr.write(`taskservice-operator: refusing to start.\n${(err as Error).message}\n`);
  process.exit(1);
}
const log = pino({ name: 'taskservice-operator', level: config.LOG_LEVEL });
const kc = new KubeConfig();
kc.loadFromDefault(); // in-cluster service account, or $KUBECONFIG / ~/.kube/config outside
const operator = await runOperator(kc, {
  ...config,
  apiTimeoutMs: config.API_TIMEOUT_SECONDS * 1000,
  log,
  // outside the cluster the gateways' Service names do not resolve: no Database check from there
  ...(config.KUBERNETES_SERVICE_HOST ? { gatewayHealth: fetchGatewayHealth } : {}),
});

let stopping = false;
const shutdown = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'shutting down: finishing in-flight reconciles, releasing the lease');
  const force = setTimeout(() => process.exit(1), 20_000);
  force.unref();
  operator.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
};
process.once('SIGTERM', () => shutdown('SIGTERM'));
process.once('SIGINT', () => shutdown('SIGINT'));
