/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * L3: the operator in-process against a real kube-apiserver 1.20.2 + etcd + kube-controller-manager
 * (garbage collector) started by tools/k8s/cluster.ts. There is no kubelet: pods never run, so
 * Deployment readiness is faked by patching Deployment status the way the deployment controller
 * would (that controller is deliberately not started, or it would reset the status).
 * Kubernetes 1.20 serves CronJob only as batch/v1beta1; the operator discovers that.
 */
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadYaml,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiServerBinaries, requireBinaries } from '../../tools/k8s/bins.ts';
import { apiGet, startTestCluster, type TestCluster } from '../../tools/k8s/cluster.ts';
import { CRD_FILE } from '../../tools/k8s/gen-crd.ts';
import { REPO } from '../../tools/k8s/paths.ts';
import { GROUP, PLURAL, SERVICES, VERSION } from '../src/crd.ts';
import { FIELD_MANAGER, FINALIZER } from '../src/desired.ts';
import { runOperator, type RunningOperator } from '../src/operator.ts';
import { has, parseMetrics, value } from '../../tools/testenv/metrics.ts';
import { eventually } from '../../tools/testenv/wait.ts';
import { minimal } from './fixtures.ts';

const gate = requireBinaries(apiServerBinaries(), 'tools/k8s/ensure-apiserver.sh');
const NS = 'apps';
const LEASE_NS = 'operators';
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const log = pino({ level: process.env.OPERATOR_TEST_LOG ?? 'silent' });

describe.skipIf(!gate.run)('operator against a real kube-apiserver (L3)', () => {
  let cluster: TestCluster;
  let kc: KubeConfig;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let objects: KubernetesObjectApi;
  const operators: RunningOperator[] = [];

  const start = (id: string) =>
    runOperator(kc, {
      log: log.child({ replica: id }),
      POD_NAMESPACE: LEASE_NS,
      POD_NAME: id,
      LEASE_NAME: 'taskservice-operator',
      LEADER_ELECT: true,
      LEASE_DURATION_SECONDS: 8,
      HEALTH_PORT: 0,
      WORKERS: 2,
      retryPeriodMs: 300,
      notReadyRecheckMs: 1000,
    });

  const getTs = (name: string) => custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name });
  const cond = (ts: any, type: string) => ts.status?.conditions?.find((c: any) => c.type === type);
  const children = async (name: string, namespace = NS) => {
    const sel = `tasks.example.io/owner-name=${name}`;
    const [cms, svcs, deps, dss, cjs] = await Promise.all([
      core.listNamespacedConfigMap({ namespace, labelSelector: sel }),
      core.listNamespacedService({ namespace, labelSelector: sel }),
      apps.listNamespacedDeployment({ namespace, labelSelector: sel }),
      apps.listNamespacedDaemonSet({ namespace, labelSelector: sel }),
      objects.list('batch/v1beta1', 'CronJob', namespace, undefined, undefined, undefined, undefined, sel),
    ]);
    return {
      configMaps: cms.items,
      services: svcs.items,
      deployments: deps.items,
      daemonSets: dss.items,
      cronJobs: cjs.items as any[],
      count: cms.items.length + svcs.items.length + deps.items.length + dss.items.length + cjs.items.length,
    };
  };
  /** What the deployment controller + kubelets would report once every pod is up. */
  const markAvailable = async (name: string) => {
    for (const d of (await children(name)).deployments) {
      const n = d.spec?.replicas ?? 1;
      await apps.patchNamespacedDeploymentStatus(
        {
          name: d.metadata!.name!,
          namespace: NS,
          body: { status: { observedGeneration: d.metadata!.generation, replicas: n, updatedReplicas: n, readyReplicas: n, availableReplicas: n } },
        },
        merge,
      );
    }
  };
  const leaderOf = () => operators.filter((o) => o.isLeader());

  beforeAll(async () => {
    cluster = await startTestCluster();
    kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    apps = kc.makeApiClient(AppsV1Api);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    objects = KubernetesObjectApi.makeApiClient(kc);
    // The CRD exactly as the chart ships it (YAML through loadYaml keeps every schema key).
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_FILE, 'utf8'));
    await ext.createCustomResourceDefinition({ body: crd });
    await eventually('CRD established', async () => {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
    for (const name of [NS, LEASE_NS]) await core.createNamespace({ body: { metadata: { name } } });
    operators.push(await start('replica-a'), await start('replica-b'));
  }, 180_000);

  afterAll(async () => {
    await Promise.all(operators.map((o) => o.stop()));
    await cluster?.stop();
  }, 60_000);

  it('two replicas: exactly one leads, and the Lease names it', async () => {
    const [leader] = await eventually('a leader', async () => (leaderOf().length === 1 ? leaderOf() : undefined));
    const lease = await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'taskservice-operator', namespace: LEASE_NS });
    const leaderIndex = operators.indexOf(leader!);
    expect(lease.spec?.holderIdentity).toBe(leaderIndex === 0 ? 'replica-a' : 'replica-b');
    // a while later there is still exactly one (the standby keeps losing the CAS race)
    await new Promise((r) => setTimeout(r, 1500));
    expect(leaderOf()).toHaveLength(1);
    expect(leader!.controller()?.cronJobApiVersion).toBe('batch/v1beta1');
  });

  it('create: every child appears, owned and applied by one field manager; status becomes Ready once Deployments are available', async () => {
    const ts = minimal('demo', NS);
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: NS,
      body: { apiVersion: ts.apiVersion, kind: ts.kind, metadata: { name: 'demo' }, spec: ts.spec },
    });
    const c = await eventually('children', async () => {
      const c = await children('demo');
      // ConfigMap, 6 Services + the operator-run NATS Service, 6 Deployments, CronJob
      return c.count === 1 + 7 + 6 + 1 ? c : undefined;
    });
    const stored = await getTs('demo');
    expect(stored.spec.replicas.gateway).toBe(2); // CRD default applied by the API server
    for (const d of c.deployments) {
      expect(d.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'TaskService', name: 'demo', uid: stored.metadata.uid, controller: true });
      expect(d.metadata?.managedFields?.map((f) => `${f.manager}/${f.operation}`)).toContain(`${FIELD_MANAGER}/Apply`);
    }
    expect(c.deployments.map((d) => d.metadata?.name).sort()).toEqual(SERVICES.map((s) => `demo-${s}`).sort());
    expect(c.cronJobs).toHaveLength(1); // listed through batch/v1beta1, the version 1.20 serves
    expect(c.cronJobs[0].spec.schedule).toBe('*/5 * * * *');

    const notReady = await eventually('status written', async () => {
      const t = await getTs('demo');
      return t.status?.observedGeneration === 1 && cond(t, 'Ready') ? t : undefined;
    });
    expect(cond(notReady, 'Ready')).toMatchObject({ status: 'False', reason: 'ServicesUnavailable' });
    expect(cond(notReady, 'Progressing')?.status).toBe('True');

    await markAvailable('demo');
    const ready = await eventually('Ready=True', async () => {
      const t = await getTs('demo');
      return cond(t, 'Ready')?.status === 'True' ? t : undefined;
    });
    expect(ready.status.readyServices).toBe('6/6');
    expect(cond(ready, 'Degraded')?.status).toBe('False');
    expect(cond(ready, 'Progressing')?.status).toBe('False');
    const events = await eventually('a Ready event', async () => {
      const e = await core.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=demo' });
      return e.items.some((x) => x.reason === 'AllServicesAvailable') ? e.items : undefined;
    });
    expect(events.find((x) => x.reason === 'AllServicesAvailable')?.source?.component).toBe(FIELD_MANAGER);
  });

  it('spec change: children updated, observedGeneration advanced', async () => {
    await custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name: 'demo', body: { spec: { replicas: { gateway: 3 }, config: { LOG_LEVEL: 'debug' } } } },
      merge,
    );
    const gw = await eventually('gateway scaled to 3', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'demo-gateway', namespace: NS });
      return d.spec?.replicas === 3 ? d : undefined;
    });
    expect(gw.spec?.template.metadata?.annotations?.['tasks.example.io/config-hash']).toBeDefined();
    const cm = await core.readNamespacedConfigMap({ name: 'demo-config', namespace: NS });
    expect(cm.data?.LOG_LEVEL).toBe('debug');
    const t = await eventually('observedGeneration 2', async () => {
      const t = await getTs('demo');
      return t.status?.observedGeneration === 2 ? t : undefined;
    });
    expect(t.metadata.generation).toBe(2);
    // the new template is not rolled out yet: not Ready until the Deployments report it
    expect(cond(t, 'Ready')?.status).toBe('False');
    await markAvailable('demo');
    await eventually('Ready again', async () => cond(await getTs('demo'), 'Ready')?.status === 'True');
  });

  it('reconcile is idempotent: running it again changes nothing', async () => {
    const snapshot = async () => {
      const c = await children('demo');
      const all = [...c.configMaps, ...c.services, ...c.deployments, ...c.cronJobs] as any[];
      return Object.fromEntries(all.map((o) => [o.metadata.name + '/' + (o.kind ?? ''), o.metadata.resourceVersion]));
    };
    // Writes the API server counted to the kinds of children (its own metrics): an apply of an
    // unchanged child is still a PATCH it decodes, merges and admits.
    const childWrites = async () => {
      const m = await apiGet(`${cluster.server}/metrics`, cluster.token);
      expect(m.status).toBe(200);
      const samples = parseMetrics(m.body).get('apiserver_request_total') ?? [];
      return samples.filter((x) => ['PATCH', 'APPLY', 'UPDATE', 'CREATE'].includes(x.labels.verb!) && ['configmaps', 'services', 'deployments', 'daemonsets', 'statefulsets', 'ingresses', 'cronjobs'].includes(x.labels.resource!)).reduce((n, x) => n + x.value, 0);
    };
    const controller = leaderOf()[0]!.controller()!;
    // one reconcile first: the status patches of the tests above moved the Deployments, which the operator applies once more
    controller.queue.add(`${NS}/demo`);
    await controller.queue.idle();
    const tsBefore = (await getTs('demo')).metadata.resourceVersion;
    const before = await snapshot();
    const writesBefore = await childWrites();
    for (let i = 0; i < 3; i++) {
      controller.queue.add(`${NS}/demo`);
      await controller.queue.idle();
    }
    expect(await snapshot()).toEqual(before);
    expect((await getTs('demo')).metadata.resourceVersion).toBe(tsBefore); // no status rewrite either
    expect(await childWrites()).toBe(writesBefore); // and not even a no-op apply
  });

  it('every replica serves /metrics on its health port: the leader counts each reconcile, the standby says it does not lead', async () => {
    const metrics = async (op: RunningOperator) => {
      const res = await fetch(`http://127.0.0.1:${op.healthPort()}/metrics`);
      expect(res.status).toBe(200);
      return parseMetrics(await res.text());
    };
    const leader = leaderOf()[0]!;
    const standby = operators.find((o) => o !== leader)!;
    const before = await metrics(leader);
    expect(value(before, 'tasksvc_operator_reconciles_total', { outcome: 'ok' })).toBeGreaterThan(0); // the create above
    const controller = leader.controller()!;
    controller.queue.add(`${NS}/demo`);
    await controller.queue.idle();
    // only this test's reconcile unless a child's event re-queued it meanwhile: at least one more, counted with its duration
    const after = await metrics(leader);
    const more = value(after, 'tasksvc_operator_reconciles_total', { outcome: 'ok' }) - value(before, 'tasksvc_operator_reconciles_total', { outcome: 'ok' });
    expect(more).toBeGreaterThanOrEqual(1);
    expect(value(after, 'tasksvc_operator_reconcile_duration_seconds_count', { outcome: 'ok' }) - value(before, 'tasksvc_operator_reconcile_duration_seconds_count', { outcome: 'ok' })).toBe(more);
    expect(value(after, 'tasksvc_operator_leader')).toBe(1);
    expect(has(after, 'tasksvc_operator_queue_depth')).toBe(true);
    expect(has(after, 'process_cpu_user_seconds_total')).toBe(true);
    const idle = await metrics(standby);
    expect(value(idle, 'tasksvc_operator_leader')).toBe(0);
    expect(value(idle, 'tasksvc_operator_queue_depth')).toBe(0);
  });

  it('a child deleted by hand is recreated', async () => {
    const before = await apps.readNamespacedDeployment({ name: 'demo-auth', namespace: NS });
    await apps.deleteNamespacedDeployment({ name: 'demo-auth', namespace: NS });
    await core.deleteNamespacedService({ name: 'demo-tasks', namespace: NS });
    const after = await eventually('demo-auth recreated', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'demo-auth', namespace: NS }).catch(() => undefined);
      return d && d.metadata?.uid !== before.metadata?.uid ? d : undefined;
    });
    expect(after.spec?.replicas).toBe(2);
    await eventually('demo-tasks Service recreated', async () => core.readNamespacedService({ name: 'demo-tasks', namespace: NS }).catch(() => undefined));
  });

  it('the leader steps down on stop and the standby takes over and keeps reconciling', async () => {
    const [leader] = leaderOf();
    const standby = operators.find((o) => o !== leader)!;
    await leader!.stop();
    operators.splice(operators.indexOf(leader!), 1);
    await eventually('standby leads', async () => standby.isLeader());
    await apps.deleteNamespacedDeployment({ name: 'demo-notifier', namespace: NS });
    await eventually('recreated by the new leader', async () => apps.readNamespacedDeployment({ name: 'demo-notifier', namespace: NS }).catch(() => undefined));
  });

  it('firewall in another namespace: DaemonSet + config there, guarded by a finalizer; deleting the CR removes every child', async () => {
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: NS,
        name: 'demo',
        // no node here names its pod network: the spec does
        body: { spec: { firewall: { enabled: true, namespace: 'kube-system', podCIDRs: ['10.244.0.0/16'], config: { acceptance: { duration: 60 } } } } },
      },
      merge,
    );
    const ds = await eventually('firewall DaemonSet', async () => (await children('demo', 'kube-system')).daemonSets[0]);
    expect(ds.spec?.template.spec?.hostNetwork).toBe(true);
    expect(ds.spec?.template.spec?.containers.find((c) => c.name === 'core')?.securityContext?.privileged).toBe(true);
    const fwConfig = await core.readNamespacedConfigMap({ name: 'demo-firewall', namespace: 'kube-system' });
    expect(JSON.parse(fwConfig.data!['config.json']!).acceptance).toEqual({ enabled: true, duration: 60 });
    expect((await getTs('demo')).metadata.finalizers).toContain(FINALIZER);

    await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name: 'demo' });
    await eventually('CR gone', async () => (await getTs('demo').catch((e: any) => (e.code === 404 ? 'gone' : undefined))) === 'gone');
    await eventually('cross-namespace children gone', async () => (await children('demo', 'kube-system')).count === 0);
    await eventually('owned children garbage-collected', async () => (await children('demo')).count === 0, 60_000);
  });

  it('the uninstall hook (operator/src/uninstall.ts) deletes the release\'s TaskServices (never others) and waits until the operator has cleaned up; it names what is stuck', async () => {
    const runHook = (timeout: string) =>
      new Promise<{ code: number | null; output: string }>((resolve) => {
        const p = spawn(process.execPath, [join(REPO, 'operator', 'src', 'uninstall.ts')], { env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, UNINSTALL_TIMEOUT_SECONDS: timeout, RELEASE_NAME: 'tso', RELEASE_NAMESPACE: LEASE_NS }, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        p.stdout.on('data', (d: Buffer) => (output += d.toString()));
        p.stderr.on('data', (d: Buffer) => (output += d.toString()));
        // 'close', not 'exit': the output is read in full only once the pipes are drained
        p.on('close', (code) => resolve({ code, output }));
      });
    const helmAnnotations = { 'meta.helm.sh/release-name': 'tso', 'meta.helm.sh/release-namespace': LEASE_NS };
    const create = (name: string, finalizers?: string[], annotations: Record<string, string> = helmAnnotations) => {
      const ts = minimal(name, NS);
      return custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, body: { apiVersion: ts.apiVersion, kind: ts.kind, metadata: { name, finalizers, annotations }, spec: ts.spec } });
    };
    // applied by hand, and by another release of the chart: neither is the hook's to delete
    await create('hand-made', undefined, {});
    await create('other-release', undefined, { 'meta.helm.sh/release-name': 'tso2', 'meta.helm.sh/release-namespace': LEASE_NS });
    // something other than the operator holds this one: the hook gives up at its deadline and names it
    await create('hook-held', ['test.example.io/hold']);
    const stuck = await runHook('2');
    expect(stuck.code, stuck.output).toBe(1);
    expect(stuck.output).toContain(`still there after 2 s: ${NS}/hook-held`);

    // one with a firewall in another namespace (the operator's finalizer): the hook waits while the
    // operator removes it, and finishes once the held one is released too
    await create('hook-a');
    await custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name: 'hook-a', body: { spec: { firewall: { enabled: true, namespace: 'kube-system', podCIDRs: ['10.244.0.0/16'] } } } },
      merge,
    );
    await eventually('hook-a firewall DaemonSet', async () => (await children('hook-a', 'kube-system')).daemonSets[0]);
    const hook = runHook('120');
    await eventually('hook-a and its firewall DaemonSet removed', async () => (await getTs('hook-a').catch((e: any) => (e.code === 404 ? 'gone' : undefined))) === 'gone' && (await children('hook-a', 'kube-system')).count === 0);
    await custom.patchNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name: 'hook-held', body: { metadata: { finalizers: [] } } }, merge);
    const clean = await hook;
    expect(clean.code, clean.output).toBe(0);
    expect(clean.output).toContain(`deleting 2 TaskService(s)`);
    expect(clean.output).toContain(`leaving 2 TaskService(s) the release did not create: ${NS}/hand-made, ${NS}/other-release`);
    expect(clean.output).toContain('every TaskService of the release is gone');
    for (const name of ['hand-made', 'other-release']) {
      expect((await getTs(name)).metadata.deletionTimestamp).toBeUndefined();
      await custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name });
    }
  });

  it('the operator process (operator/src/main.ts) leads, and on SIGTERM exits 0 and releases its Lease', async () => {
    const leases = kc.makeApiClient(CoordinationV1Api);
    const proc = spawn(process.execPath, [join(REPO, 'operator', 'src', 'main.ts')], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, POD_NAMESPACE: LEASE_NS, POD_NAME: 'proc-1', LEASE_NAME: 'sigterm-test', HEALTH_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    try {
      await eventually('process holds the lease', async () => {
        const l = await leases.readNamespacedLease({ name: 'sigterm-test', namespace: LEASE_NS });
        return l.spec?.holderIdentity === 'proc-1' && output.includes('controller started');
      });
    } catch (err) {
      proc.kill('SIGKILL');
      throw new Error(`${String(err)}\n${output}`, { cause: err });
    }
    proc.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    const lease = await leases.readNamespacedLease({ name: 'sigterm-test', namespace: LEASE_NS });
    expect(lease.spec?.holderIdentity).toBeUndefined();
    expect(output).toMatch(/shutting down/);
  });
});
