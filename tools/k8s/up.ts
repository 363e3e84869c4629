/**
 * `npm run cluster:up`: the one-node cluster (node.ts) with the operator chart and a TaskService on the
 * locally built images, backed by a private PostgreSQL and nats-server on this machine. Prints the
 * gateway's Service URL and a KUBECONFIG; Ctrl-C stops everything and restores the host.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, createLogger, startLocalPostgres } from '@tasksvc/runtime';
import { startNats } from '../testenv/nats.ts';
import { until } from '../testenv/wait.ts';
import { APP_NAMESPACE, applyTaskService, forward, installOperator, TS_NAME } from './deploy.ts';
import { HOST_IP, startNodeCluster } from './node.ts';

const say = (l: string) => console.log(`[cluster:up] ${l}`);
const dir = mkdtempSync(join(tmpdir(), 'tasksvc-cluster-up-'));
const [pg, nats] = await Promise.all([startLocalPostgres({ dataDir: join(dir, 'pg'), log: createLogger('pg', 'warn') }), startNats({ storeDir: join(dir, 'nats') })]);
const cluster = await startNodeCluster({ log: say });
const stopCluster = async () => {
  const problems = await cluster.stop();
  if (problems.length) console.error(`[cluster:up] host not fully restored:\n${problems.join('\n')}`);
};
const stops: (() => Promise<unknown>)[] = [stopCluster, () => pg.stop(), () => nats.stop()];
const bye = async (code: number) => {
  for (const s of stops) await s().catch((e: Error) => console.error(e.message));
  rmSync(dir, { recursive: true, force: true });
  process.exit(code);
};
process.once('SIGINT', () => void bye(0));
process.once('SIGTERM', () => void bye(0));
try {
  const db = new URL(await createDatabase(pg.url, 'tasks'));
  const pgFwd = await forward(HOST_IP, { host: db.hostname, port: Number(db.port) });
  const natsFwd = await forward(HOST_IP, { host: '127.0.0.1', port: nats.port });
  stops.unshift(() => pgFwd.close(), () => natsFwd.close());
  db.hostname = HOST_IP;
  db.port = String(pgFwd.port);
  say('installing the operator chart…');
  await installOperator(cluster);
  await applyTaskService(cluster, { databaseUrl: db.toString(), natsUrl: `nats://${HOST_IP}:${natsFwd.port}` });
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
  say('Ctrl-C stops the cluster, PostgreSQL and NATS and restores the host');
} catch (err) {
  console.error(err);
  await bye(1);
}
