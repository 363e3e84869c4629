import { readFileSync } from 'node:fs';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { pino } from 'pino';
import { GROUP, PLURAL, VERSION } from '../src/crd.ts';
import { runOperator } from '../src/operator.ts';
import { minimal } from './fixtures.ts';
import { apiServerBinaries } from '../../tools/k8s/bins.ts';
import { startTestCluster } from '../../tools/k8s/cluster.ts';
import { CRD_FILE } from '../../tools/k8s/gen-crd.ts';
import { eventually } from '../../tools/testenv/wait.ts';

export interface MetricsOperator {
  /** the operator replica's `/metrics` (its health port) */
  metricsUrl: string;
  stop(): Promise<void>;
}

/** Why the operator cannot run here, or null when it can (the kube-apiserver binaries of tools/k8s/ensure-apiserver.sh). */
export function operatorUnavailable(): string | null {
  const bins = apiServerBinaries();
  return bins.missing.length ? `missing ${bins.missing.join(', ')} (tools/k8s/ensure-apiserver.sh)` : null;
}

/**
 * For tools/observability/dashboard.test.ts: one operator replica in-process against a real kube-apiserver (tools/k8s/cluster.ts), the chart's
 * CRD and one TaskService to look after, so its metrics move as on a cluster: with no kubelet the
 * Deployments never become available, and the operator checks them again every second.
 */
export async function startMetricsOperator(): Promise<MetricsOperator> {
  const cluster = await startTestCluster();
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_FILE, 'utf8'));
    await ext.createCustomResourceDefinition({ body: crd });
    await eventually('CRD established', async () => (await ext.readCustomResourceDefinition({ name: crd.metadata!.name! })).status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'));
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'apps' } } });
    const op = await runOperator(kc, {
      log: pino({ level: 'silent' }),
      POD_NAMESPACE: 'apps',
      POD_NAME: 'operator-0',
      LEASE_NAME: 'taskservice-operator',
      LEADER_ELECT: false,
      LEASE_DURATION_SECONDS: 15,
      HEALTH_PORT: 0,
      WORKERS: 1,
      notReadyRecheckMs: 1000,
    });
    const ts = minimal('demo', 'apps');
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: 'apps', body: { apiVersion: ts.apiVersion, kind: ts.kind, metadata: { name: 'demo' }, spec: ts.spec } });
    return {
      metricsUrl: `http://127.0.0.1:${op.healthPort()}/metrics`,
      async stop() {
        await op.stop();
        await cluster.stop();
      },
    };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}
