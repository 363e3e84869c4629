/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * The chart's RBAC is sufficient and minimal: the operator runs authenticated as the chart's service
 * account (a token-file user with the service account's name and groups) against a real
 * kube-apiserver 1.20.2 with only the chart's ClusterRole/Role bound, and reconciles a TaskService
 * end to end (children, status, events, Lease, cross-namespace finalizer). A second release in
 * namespaced mode (watchNamespaces) gets Roles in its namespaces only: `kubectl auth can-i` shows what
 * it may and may not do, and its operator reconciles there and nowhere else.
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
/** the namespaced-mode release `tsn`, watching team-a only */
const NSA = 'tsn-task-service-operator';
const NSA_TOKEN = 'namespaced-sa-token';
const saUser = (name: string, token: string) => ({ token, name: `system:serviceaccount:operators:${name}`, groups: ['system:serviceaccounts', 'system:serviceaccounts:operators', 'system:authenticated'] });
const saConfig = (server: string, token: string) => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server, skipTLSVerify: true }],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'sa', cluster: 'test', user: 'sa' }],
    currentContext: 'sa',
  });
  return kc;
};

describe.skipIf(!gate.run)('chart RBAC against a real kube-apiserver', () => {
  let cluster: TestCluster;
  const kubectl = (args: string[], input?: string) => spawnSync(bin.kubectl, ['--kubeconfig', cluster.kubeconfigPath, ...args], { encoding: 'utf8', input });

  beforeAll(async () => {
    cluster = await startTestCluster({
      controllers: [],
      users: [saUser(SA, SA_TOKEN), saUser(NSA, NSA_TOKEN)],
    });
    for (const args of [
      ['apply', '--server-side', '-f', CRD_FILE],
      ['wait', '--for=condition=Established', 'crd/taskservices.tasks.example.io', '--timeout=60s'],
      ['create', 'namespace', 'operators'],
      ['create', 'namespace', 'apps'],
      ['create', 'namespace', 'team-a'],
    ]) {
      const r = kubectl(args);
      if (r.status !== 0) throw new Error(r.stderr);
    }
    const rbac = spawnSync(bin.helm, ['template', 'tso', CHART_DIR, '--namespace', 'operators', '--show-only', 'templates/rbac.yaml', '--show-only', 'templates/serviceaccount.yaml'], { encoding: 'utf8' });
    const r = kubectl(['apply', '-f', '-'], rbac.stdout);
    if (r.status !== 0) throw new Error(r.stderr);
    const namespaced = spawnSync(
      bin.helm,
      ['template', 'tsn', CHART_DIR, '--namespace', 'operators', '--set', 'watchNamespaces={team-a}', '--show-only', 'templates/rbac.yaml', '--show-only', 'templates/serviceaccount.yaml'],
      { encoding: 'utf8' },
    );
    if (namespaced.status !== 0) throw new Error(namespaced.stderr);
    const n = kubectl(['apply', '-f', '-'], namespaced.stdout);
    if (n.status !== 0) throw new Error(n.stderr);
  }, 180_000);
  afterAll(async () => cluster?.stop(), 60_000);

  it('the operator, authenticated as its service account, reconciles a TaskService; it cannot list Secrets', async () => {
    const kc = saConfig(cluster.server, SA_TOKEN);
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

  it('namespaced mode (watchNamespaces): kubectl auth can-i allows the operator its work in team-a and nothing elsewhere', () => {
    const can = (...args: string[]) => {
      const r = kubectl(['auth', 'can-i', '--as', `system:serviceaccount:operators:${NSA}`, ...args]);
      return r.stdout.trim();
    };
    // what it needs, in its namespace
    for (const args of [
      ['watch', 'taskservices.tasks.example.io', '-n', 'team-a'],
      ['patch', 'taskservices.tasks.example.io', '--subresource=status', '-n', 'team-a'],
      ['create', 'deployments.apps', '-n', 'team-a'],
      ['create', 'secrets', '-n', 'team-a'],
      ['watch', 'poddisruptionbudgets.policy', '-n', 'team-a'],
      ['update', 'leases.coordination.k8s.io', '-n', 'operators'],
    ]) expect(can(...args), args.join(' ')).toBe('yes');
    // nothing cluster-wide, nothing in another namespace, never a list of Secrets
    for (const args of [
      ['get', 'secrets', '-n', 'kube-system'],
      ['create', 'daemonsets.apps', '-n', 'kube-system'],
      ['create', 'deployments.apps', '-n', 'apps'],
      ['list', 'taskservices.tasks.example.io', '--all-namespaces'],
      ['list', 'nodes'],
      ['list', 'secrets', '-n', 'team-a'],
    ]) expect(can(...args), args.join(' ')).toBe('no');
    // the cluster-mode account for comparison: its Secret rights are get/create/patch, never list
    expect(kubectl(['auth', 'can-i', '--as', `system:serviceaccount:operators:${SA}`, 'list', 'secrets', '-n', 'kube-system']).stdout.trim()).toBe('no');
  });

  it('namespaced mode: the operator, as that account, reconciles a TaskService in team-a and ignores one in apps', async () => {
    const op = await runOperator(saConfig(cluster.server, NSA_TOKEN), {
      log: pino({ level: process.env.OPERATOR_TEST_LOG ?? 'silent' }),
      POD_NAMESPACE: 'operators',
      POD_NAME: 'namespaced-test',
      LEASE_NAME: 'taskservice-operator-tsn',
      LEADER_ELECT: true,
      LEASE_DURATION_SECONDS: 8,
      HEALTH_PORT: 0,
      WORKERS: 2,
      retryPeriodMs: 300,
      WATCH_NAMESPACES: ['team-a'],
    });
    try {
      const admin = new KubeConfig();
      admin.loadFromFile(cluster.kubeconfigPath);
      const custom = admin.makeApiClient(CustomObjectsApi);
      const apps = admin.makeApiClient(AppsV1Api);
      const spec = { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } }, firewall: { enabled: true } };
      for (const namespace of ['team-a', 'apps']) {
        await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'TaskService', metadata: { name: 'ns' }, spec } });
      }
      const base = { group: GROUP, version: VERSION, plural: PLURAL, name: 'ns' };
      const stored: any = await eventually('status in team-a', async () => {
        const t: any = await custom.getNamespacedCustomObject({ ...base, namespace: 'team-a' });
        return t.status?.observedGeneration === 1 && t.status.conditions.find((c: any) => c.type === 'Degraded')?.status === 'False' ? t : undefined;
      });
      expect(stored.status.conditions.find((c: any) => c.type === 'Firewall')).toMatchObject({ status: 'False', reason: 'NamespacedMode' });
      expect((await apps.listNamespacedDeployment({ namespace: 'team-a' })).items).toHaveLength(6);
      expect(op.health()).toMatchObject({ ok: true, leader: true });
      // outside its namespaces: untouched
      expect((await custom.getNamespacedCustomObject({ ...base, namespace: 'apps' })).status).toBeUndefined();
      expect((await apps.listNamespacedDeployment({ namespace: 'apps', labelSelector: 'tasks.example.io/owner-name=ns' })).items).toHaveLength(0);
      for (const namespace of ['team-a', 'apps']) await custom.deleteNamespacedCustomObject({ ...base, namespace });
    } finally {
      await op.stop();
    }
  });
});
