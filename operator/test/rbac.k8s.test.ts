/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * The chart's RBAC is sufficient and minimal: the operator runs authenticated as the chart's service
 * account (a token-file user with the service account's name and groups) against a real
 * kube-apiserver 1.20.2 with only the chart's ClusterRole/Role bound, and reconciles a TaskService
 * end to end (children, status, events, Lease, cross-namespace finalizer).
 */
import { spawnSync } from 'node:child_process';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiServerBinaries, helmBinaries, requireBinaries } from '../../tools/k8s/bins.ts';
import { startTestCluster, type TestCluster } from '../../tools/k8s/cluster.ts';
import { CHART_DIR, CRD_FILE } from '../../tools/k8s/gen-crd.ts';
import { GROUP, PLURAL, VERSION } from '../src/crd.ts';
import { FINALIZER } from '../src/desired.ts';
import { runOperator } from '../src/operator.ts';
import { eventually } from '../../tools/testenv/wait.ts';
import { full } from './fixtures.ts';

const helmGate = requireBinaries(helmBinaries(), 'tools/k8s/ensure-helm.sh');
const gate = helmGate.run ? requireBinaries(apiServerBinaries(), 'tools/k8s/ensure-apiserver.sh') : helmGate;
const bin = helmBinaries().found as { helm: string; kubectl: string };
const SA = 'tso-task-service-operator';
const SA_TOKEN = 'operator-sa-token';

describe.skipIf(!gate.run)('chart RBAC against a real kube-apiserver', () => {
  let cluster: TestCluster;
  const kubectl = (args: string[], input?: string) => spawnSync(bin.kubectl, ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', input });

  beforeAll(async () => {
    cluster = await startTestCluster({
      controllers: [],
      users: [{ token: SA_TOKEN, name: `system:serviceaccount:operators:${SA}`, groups: ['system:serviceaccounts', 'system:serviceaccounts:operators', 'system:authenticated'] }],
    });
    for (const args of [
      ['apply', '--server-side', '-f', CRD_FILE],
      ['wait', '--for=condition=Established', 'crd/taskservices.tasks.example.io', '--timeout=60s'],
      ['create', 'namespace', 'operators'],
      ['create', 'namespace', 'apps'],
    ]) {
      const r = kubectl(args);
      if (r.status !== 0) throw new Error(r.stderr);
    }
    const rbac = spawnSync(bin.helm, ['template', 'tso', CHART_DIR, '--namespace', 'operators', '--show-only', 'templates/rbac.yaml', '--show-only', 'templates/serviceaccount.yaml'], { encoding: 'utf8' });
    const r = kubectl(['apply', '-f', '-'], rbac.stdout);
    if (r.status !== 0) throw new Error(r.stderr);
  }, 180_000);
  afterAll(async () => cluster?.stop(), 60_000);

  it('the operator, authenticated as its service account, reconciles a TaskService; it cannot list Secrets', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'test', server: cluster.server, skipTLSVerify: true }],
      users: [{ name: 'sa', token: SA_TOKEN }],
      contexts: [{ name: 'sa', cluster: 'test', user: 'sa' }],
      currentContext: 'sa',
    });
    await expect(kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: 'apps' })).rejects.toMatchObject({ code: 403 });
    const op = await runOperator(kc, {
      log: pino({ level: process.env.OPERATOR_TEST_LOG ?? 'silent' }),
      POD_NAMESPACE: 'operators',
      POD_NAME: 'rbac-test',
      LEASE_NAME: 'taskservice-operator',
      LEADER_ELECT: true,
      LEASE_DURATION_SECONDS: 8,
      HEALTH_PORT: 0,
      WORKERS: 2,
      retryPeriodMs: 300,
    });
    try {
      const admin = new KubeConfig();
      admin.loadFromFile(cluster.kubeconfigPath);
      const custom = admin.makeApiClient(CustomObjectsApi);
      const apps = admin.makeApiClient(AppsV1Api);
      const base = { group: GROUP, version: VERSION, plural: PLURAL, namespace: 'apps' };
      const ts = full('rbac', 'apps'); // firewall in kube-system: finalizer and cross-namespace children
      ts.spec.firewall.podCIDRs = ['10.244.0.0/16']; // no node here names its pod network
      await custom.createNamespacedCustomObject({ ...base, body: { apiVersion: ts.apiVersion, kind: ts.kind, metadata: { name: 'rbac' }, spec: ts.spec } });
      const stored: any = await eventually('status', async () => {
        const t: any = await custom.getNamespacedCustomObject({ ...base, name: 'rbac' });
        return t.status?.observedGeneration === 1 && t.status.conditions.find((c: any) => c.type === 'Degraded')?.status === 'False' ? t : undefined;
      });
      expect(stored.metadata.finalizers).toContain(FINALIZER);
      expect((await apps.listNamespacedDeployment({ namespace: 'apps' })).items).toHaveLength(6);
      expect((await apps.listNamespacedDaemonSet({ namespace: 'kube-system' })).items.map((d: any) => d.metadata?.name)).toEqual(['rbac-firewall']);
      await eventually('an event', async () => (await admin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: 'apps' })).items.length > 0);
      await custom.deleteNamespacedCustomObject({ ...base, name: 'rbac' });
      await eventually('finalizer cleanup', async () => (await apps.listNamespacedDaemonSet({ namespace: 'kube-system' })).items.length === 0);
      await eventually('CR gone', async () => custom.getNamespacedCustomObject({ ...base, name: 'rbac' }).then(() => false, (e: any) => e.code === 404));
    } finally {
      await op.stop();
    }
  });
});
