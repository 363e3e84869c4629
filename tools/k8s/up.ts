/**
 * `npm run cluster:up`: the one-node cluster (node.ts) on the operator's defaults, with the operator
 * chart and a TaskService on the locally built images: the operator-run NATS, a managed database served
 * by the CloudNativePG stand-in (cnpg-standin.ts, running in this process), the generated Secret, the
 * cron job. Prints the gateway's Service URL and a KUBECONFIG; Ctrl-C stops everything and restores the host.
 */
import { until } from '../testenv/wait.ts';
import { startCnpgStandIn } from './cnpg-standin.ts';
import { APP_NAMESPACE, applyDefaultsTaskService, installOperator, TS_NAME } from './deploy.ts';
import { startNodeCluster } from './node.ts';

const say = (l: string) => console.log(`[cluster:up] ${l}`);
const cluster = await startNodeCluster({ log: say });
const standIn = await startCnpgStandIn(cluster, (l) => say(`cnpg stand-in: ${l}`));
const bye = async (code: number) => {
  standIn.stop();
  const problems = await cluster.stop();
  if (problems.length) console.error(`[cluster:up] host not fully restored:\n${problems.join('\n')}`);
  process.exit(problems.length ? 1 : code);
};
process.once('SIGINT', () => void bye(0));
process.once('SIGTERM', () => void bye(0));
try {
  say('installing the operator chart…');
  await installOperator(cluster);
  await applyDefaultsTaskService(cluster);
  // the operator creates the Service after the TaskService is applied: ask until it has a cluster IP
  const url = await until(
    async () => {
      const ip = await cluster.kubectl('get', 'service', `${TS_NAME}-gateway`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.spec.clusterIP}').catch(() => '');
      return ip && (await fetch(`http://${ip}:3000/api/health`).then((r) => r.ok, () => false)) && `http://${ip}:3000`;
    },
    'the gateway to answer',
    600_000,
  );
  say(`ready: ${url}  (export KUBECONFIG=${cluster.kubeconfigPath}; kubectl get pods -A)`);
  say('Ctrl-C stops the cluster and restores the host');
} catch (err) {
  console.error(err);
  await bye(1);
}
