/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * Issue 16 against a real kube-apiserver 1.20.2 (tools/k8s/cluster.ts): the zombie leader, a firewall
 * that keeps the node reachable, one TaskService as a whole system, and lifecycle safety. No kubelet:
 * readiness is faked by patching Deployment status (see operator.k8s.test.ts).
 */
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  loadYaml,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiServerBinaries, requireBinaries } from '../../tools/k8s/bins.ts';
import { startTestCluster, type TestCluster } from '../../tools/k8s/cluster.ts';
import { CRD_FILE } from '../../tools/k8s/gen-crd.ts';
import { eventually, until } from '../../tools/testenv/wait.ts';
import { deriveSubkeys, parseKeyRing, type RingKey } from '../../proto/src/ring-keys.ts';
import { GROUP, PLURAL, SERVICES, VERSION } from '../src/crd.ts';
import { SUBKEYS_CHECKSUM_ANNOTATION } from '../src/desired.ts';
import { runOperator, type OperatorOptions, type RunningOperator } from '../src/operator.ts';
import { startFaultProxy } from './fault-proxy.ts';
import { minimal } from './fixtures.ts';

const gate = requireBinaries(apiServerBinaries(), 'tools/k8s/ensure-apiserver.sh');
const NS = 'apps';
const LEASE_NS = 'operators';
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const log = pino({ level: process.env.OPERATOR_TEST_LOG ?? 'silent' });

describe.skipIf(!gate.run)('issue 16 against a real kube-apiserver', () => {
  let cluster: TestCluster;
  let kc: KubeConfig;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  const operators: RunningOperator[] = [];

  const start = async (config: KubeConfig, id: string, lease: string, extra: Partial<OperatorOptions> = {}) => {
    const op = await runOperator(config, {
      log: log.child({ replica: id }),
      POD_NAMESPACE: LEASE_NS,
      POD_NAME: id,
      LEASE_NAME: lease,
      LEADER_ELECT: true,
      LEASE_DURATION_SECONDS: 4,
      HEALTH_PORT: 0,
      WORKERS: 2,
      retryPeriodMs: 300,
      notReadyRecheckMs: 1000,
      ...extra,
    });
    operators.push(op);
    return op;
  };
  const stop = async (op: RunningOperator) => {
    operators.splice(operators.indexOf(op), 1);
    await op.stop();
  };
  const health = async (op: RunningOperator) => {
    const r = await fetch(`http://127.0.0.1:${op.healthPort()}/healthz`);
    return { code: r.status, body: (await r.json()) };
  };
  const create = (name: string, spec: Record<string, unknown>, namespace = NS) =>
    custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'TaskService', metadata: { name }, spec },
    });
  const getTs = (name: string, namespace = NS): Promise<any> => custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name });
  const remove = (name: string, namespace = NS) => custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace, name });
  const cond = (ts: any, type: string) => ts?.status?.conditions?.find((c: any) => c.type === type);

  beforeAll(async () => {
    cluster = await startTestCluster();
    kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    apps = kc.makeApiClient(AppsV1Api);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_FILE, 'utf8'));
    await ext.createCustomResourceDefinition({ body: crd });
    await eventually('CRD established', async () => {
      const c = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
    });
    for (const name of [NS, LEASE_NS]) await core.createNamespace({ body: { metadata: { name } } });
  }, 180_000);

  afterAll(async () => {
    await Promise.all(operators.map((o) => o.stop()));
    await cluster?.stop();
  }, 60_000);

  it('zombie leader: a replica whose controller cannot start gives the Lease up, /healthz says so, the standby reconciles', async () => {
    const proxy = await startFaultProxy(kc);
    try {
      // One 503 where a new leader starts its controller: CronJob API discovery.
      proxy.fail((req) => req.url === '/apis/batch/v1');
      const broken = await start(proxy.kubeConfig(), 'broken', 'zombie');
      await until(() => proxy.faults() > 0, 'the broken replica to lead and hit the fault');
      proxy.fail(undefined);
      const standby = await start(kc, 'standby', 'zombie');
      await until(() => standby.isLeader(), 'the standby to take the Lease over');
      const h = await health(broken);
      expect(h.code).toBe(503);
      expect(h.body).toMatchObject({ status: 'failing', leader: false, controller: 'failed' });
      expect(h.body.error).toContain('503');
      expect((await health(standby)).body).toMatchObject({ status: 'ok', leader: true, controller: 'running' });

      await create('zombie', minimal('zombie', NS).spec as any);
      await eventually('the standby to reconcile', async () => (await apps.readNamespacedDeployment({ name: 'zombie-gateway', namespace: NS })).metadata?.uid);
      await stop(broken);
      await stop(standby);
    } finally {
      await proxy.stop();
    }
  });

  it('a silent API server: a reconcile whose request hangs is given up and retried; a leader whose renewals hang steps down before the Lease can pass on', async () => {
    const proxy = await startFaultProxy(kc);
    try {
      // an API deadline (6 s) that alone would let a hung renewal outlast the Lease (4 s)
      const silent = await start(proxy.kubeConfig(), 'silent', 'silent', { apiTimeoutMs: 6000 });
      await until(() => silent.isLeader(), 'the replica behind the proxy to lead');
      // The reconcile's first read of its TaskService is never answered: without a deadline it would
      // hold the key for good and nothing would ever be created.
      proxy.hang((req) => req.method === 'GET' && /\/taskservices\/silent$/.test(req.url ?? '') && proxy.held() < 1);
      await create('silent', minimal('silent', NS).spec as any);
      await eventually('the reconcile to get through on its second try', async () => (await apps.readNamespacedDeployment({ name: 'silent-gateway', namespace: NS })).metadata?.uid);
      expect(proxy.held()).toBe(1);

      // Now its Lease requests hang. It must stop leading within its renew window (2/3 of 4 s), before
      // the standby may take the Lease: never two leaders at once.
      const standby = await start(kc, 'awake', 'silent');
      proxy.hang((req) => /\/leases\//.test(req.url ?? ''));
      let both = 0;
      const watch = setInterval(() => {
        if (silent.isLeader() && standby.isLeader()) both++;
      }, 10);
      try {
        await until(() => standby.isLeader(), 'the standby to take the Lease over', 20_000);
      } finally {
        clearInterval(watch);
      }
      expect(both).toBe(0);
      expect(silent.health()).toMatchObject({ leader: false, controller: 'standby' });
      await remove('silent');
      await eventually('the standby to finish the deletion', async () => !(await getTs('silent').catch(() => undefined)));
      await stop(silent);
      await stop(standby);
    } finally {
      await proxy.stop();
    }
  });

  /**
   * Issue 59 #13: the Firewall condition follows what the daemons report. No DaemonSet controller or
   * kubelet runs here, so the test writes what they would: the DaemonSet's counts, the pod on worker-1
   * with its Ready condition, and the kubelet's Event for a failed readiness probe (ready.ts's line).
   */
  async function firewallReports(ds: Awaited<ReturnType<AppsV1Api['readNamespacedDaemonSet']>>) {
    const counts = (ready: number) => ({ observedGeneration: ds.metadata!.generation, desiredNumberScheduled: 1, currentNumberScheduled: 1, numberMisscheduled: 0, updatedNumberScheduled: 1, numberReady: ready });
    const dsStatus = (ready: number) => apps.patchNamespacedDaemonSetStatus({ name: ds.metadata!.name!, namespace: NS, body: { status: counts(ready) } }, merge);
    const pod = await core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: 'fw-a-firewall-w1', labels: ds.spec!.selector.matchLabels }, spec: { nodeName: 'worker-1', containers: [{ name: 'core', image: 'task-service-firewall' }] } },
    });
    const podReady = (status: 'True' | 'False') =>
      core.patchNamespacedPodStatus({ name: pod.metadata!.name!, namespace: NS, body: { status: { conditions: [{ type: 'Ready', status, lastTransitionTime: new Date().toISOString() }] } } }, merge);
    await podReady('True');
    await dsStatus(1);
    const enforcing = await eventually('Firewall=True', async () => (cond(await getTs('fw-a'), 'Firewall')?.status === 'True' ? cond(await getTs('fw-a'), 'Firewall') : undefined));
    expect(enforcing).toMatchObject({ reason: 'Enforcing' });
    expect(enforcing.message).toContain('all 1 daemons enforce the confirmed rules of the current configuration');

    // The core was killed between applying and confirming; after its restart it rolled back, and its
    // readiness probe fails with the daemon's own words (services/firewall/test/killed-apply.netns.test.ts).
    const line =
      'RolledBack: the options in /etc/task-firewall/config.json are not in force: they were rolled back (daemon restarted during the confirmation window) and the file could not be restored (read-only, e.g. a ConfigMap); the kernel enforces the last confirmed options. A restart of the daemon (or SIGHUP) tries them again with a new confirmation window';
    const now = new Date().toISOString();
    await core.createNamespacedEvent({
      namespace: NS,
      body: {
        metadata: { name: 'fw-a-firewall-w1.probe' },
        involvedObject: { kind: 'Pod', name: pod.metadata!.name, namespace: NS, uid: pod.metadata!.uid, fieldPath: 'spec.containers{core}' },
        reason: 'Unhealthy',
        type: 'Warning',
        message: `Readiness probe failed: ${line}\n`,
        source: { component: 'kubelet', host: 'worker-1' },
        firstTimestamp: now as any,
        lastTimestamp: now as any,
        count: 1,
      },
    });
    await podReady('False');
    await dsStatus(0);
    const down = await eventually('Firewall=False', async () => (cond(await getTs('fw-a'), 'Firewall')?.status === 'False' ? cond(await getTs('fw-a'), 'Firewall') : undefined));
    expect(down, down.message).toMatchObject({ reason: 'RolledBack' });
    expect(down.message).toContain(`1 of 1 nodes do not enforce the current configuration: worker-1: ${line}`);
    await eventually('a Warning event saying so', async () => {
      const e = await core.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=fw-a' });
      return e.items.some((x) => x.reason === 'RolledBack' && x.type === 'Warning');
    });
    await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: NS });
  }

  it('firewall: derived from the cluster, off control-plane nodes, self-confirming; no web container without a password; one per node', async () => {
    const op = await start(kc, 'fw', 'firewall');
    await until(() => op.isLeader(), 'leadership');
    // Two nodes as kubeadm registers them (no kubelet runs: addresses are written into status by hand).
    for (const [name, ip, cidr, cp] of [
      ['cp-1', '192.0.2.10', '10.244.0.0/24', true],
      ['worker-1', '192.0.2.11', '10.244.1.0/24', false],
    ] as const) {
      await core.createNode({ body: { metadata: { name, labels: cp ? { 'node-role.kubernetes.io/master': '' } : {} }, spec: { podCIDR: cidr, podCIDRs: [cidr] } } });
      await core.patchNodeStatus({ name, body: { status: { addresses: [{ type: 'InternalIP', address: ip }] } } }, merge);
    }
    const fwSpec = { ...(minimal('fw-a', NS).spec as any), firewall: { enabled: true, webPasswordSecret: { name: 'no-such-secret' } } };
    await create('fw-a', fwSpec);
    // Deployed is not enforcing: until the DaemonSet controller has taken the template, the condition says so.
    const fwCond = await eventually('Firewall condition', async () => cond(await getTs('fw-a'), 'Firewall'));
    expect(fwCond, fwCond.message).toMatchObject({ status: 'False', reason: 'RollingOut' });
    const ds = await eventually('firewall DaemonSet', async () => apps.readNamespacedDaemonSet({ name: 'fw-a-firewall', namespace: NS }));
    const pod = ds.spec!.template.spec!;
    expect(pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchExpressions).toEqual(
      expect.arrayContaining([{ key: 'node-role.kubernetes.io/master', operator: 'DoesNotExist' }]),
    );
    expect(pod.tolerations ?? []).toEqual([]);
    expect(pod.containers.map((c) => c.name)).toEqual(['core']);
    // An API server on loopback publishes no Endpoints: the kubernetes Service's cluster IP stands in.
    const env = pod.containers[0]!.env!;
    expect(env.find((e) => e.name === 'FIREWALL_SELF_CONFIRM')?.value).toBe('tcp:10.96.0.1:443,tcp:$(NODE_IP):10250');
    const cm = await core.readNamespacedConfigMap({ name: 'fw-a-firewall', namespace: NS });
    const nets = JSON.parse(cm.data!['config.json']!).container.custom_networks;
    expect(nets).toEqual(expect.arrayContaining(['10.244.0.0/24', '10.244.1.0/24', '192.0.2.10/32', '192.0.2.11/32', '10.96.0.1/32']));
    const ts = await eventually('FirewallWeb condition', async () => cond(await getTs('fw-a'), 'FirewallWeb'));
    expect(ts).toMatchObject({ status: 'False', reason: 'NoPassword' });
    await eventually('a Warning event about the password', async () => {
      const e = await core.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=fw-a' });
      return e.items.some((x) => x.reason === 'NoPassword' && x.type === 'Warning');
    });

    await firewallReports(ds);

    // A second TaskService with the firewall on: refused with a condition naming the first.
    await create('fw-b', { ...fwSpec });
    const refused = await eventually('Firewall condition on fw-b', async () => cond(await getTs('fw-b'), 'Firewall'));
    expect(refused).toMatchObject({ status: 'False', reason: 'AnotherFirewall' });
    expect(refused.message).toContain(`${NS}/fw-a`);
    await expect(apps.readNamespacedDaemonSet({ name: 'fw-b-firewall', namespace: NS })).rejects.toMatchObject({ code: 404 });
    await remove('fw-a');
    await remove('fw-b');
    await stop(op);
  });

  it('one TaskService is a system: generated Secret (never overwritten), NATS StatefulSet with JetStream + auth, Ingress deriving PUBLIC_APP_URL', async () => {
    const op = await start(kc, 'sys', 'system');
    await until(() => op.isLeader(), 'leadership');
    // An admin-provided value already in the generated Secret must survive.
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'sys-generated' }, stringData: { AUTH_SECRET: 'x'.repeat(40) } } });
    await create('sys', {
      database: { secretKeyRef: { name: 'pg-app' } },
      ingress: { className: 'nginx', host: 'tasks.example.com', tlsSecretName: 'tasks-tls' },
    });
    const secret = await eventually('generated keys', async () => {
      const s = await core.readNamespacedSecret({ name: 'sys-generated', namespace: NS });
      // (every key the wiring generates; the key ring, SECRETS_KEYRING, joined these later)
      return ['AUTH_SECRET', 'CRON_SECRET', 'TOTP_ENCRYPTION_KEY', 'NATS_USER', 'NATS_PASSWORD'].every((k) => s.data?.[k]) ? s : undefined;
    });
    const value = (k: string) => Buffer.from(secret.data![k]!, 'base64').toString();
    expect(value('AUTH_SECRET')).toBe('x'.repeat(40));
    expect(value('TOTP_ENCRYPTION_KEY')).toMatch(/^[0-9a-f]{64}$/);
    expect(value('CRON_SECRET').length).toBeGreaterThanOrEqual(32);
    expect(value('NATS_PASSWORD').length).toBeGreaterThanOrEqual(32);
    const sts = await eventually('NATS StatefulSet', async () => apps.readNamespacedStatefulSet({ name: 'sys-nats', namespace: NS }));
    expect(sts.spec?.template.spec?.containers[0]?.args).toEqual(expect.arrayContaining(['--jetstream', '--user=$(NATS_USER)', '--pass=$(NATS_PASSWORD)']));
    const cm = await eventually('config', async () => core.readNamespacedConfigMap({ name: 'sys-config', namespace: NS }));
    expect(cm.data).toMatchObject({ PUBLIC_APP_URL: 'https://tasks.example.com', NATS_URL: `nats://sys-nats.${NS}.svc:4222` });
    const ing: any = await eventually('Ingress', async () =>
      custom.getNamespacedCustomObject({ group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespace: NS, name: 'sys-gateway' }),
    );
    expect(ing.spec.tls).toEqual([{ hosts: ['tasks.example.com'], secretName: 'tasks-tls' }]);
    const gw = await apps.readNamespacedDeployment({ name: 'sys-gateway', namespace: NS });
    const env = Object.fromEntries(gw.spec!.template.spec!.containers[0]!.env!.map((e) => [e.name, e.valueFrom?.secretKeyRef]));
    expect(env.DATABASE_URL).toEqual({ name: 'pg-app', key: 'uri' });
    expect(env.NATS_PASSWORD).toEqual({ name: 'sys-generated', key: 'NATS_PASSWORD' });

    // The master key ring stays in the generated Secret: each ring Deployment gets only its own derived
    // ring, and a rotation (a new key first) reaches the derived Secrets and rolls those two Deployments.
    const master = async () => Buffer.from((await core.readNamespacedSecret({ name: 'sys-generated', namespace: NS })).data?.SECRETS_KEYRING ?? '', 'base64').toString();
    const derivedRing = async (svc: string) => Buffer.from((await core.readNamespacedSecret({ name: `sys-${svc}-keys`, namespace: NS }).catch(() => undefined))?.data?.SECRETS_SUBKEYS ?? '', 'base64').toString();
    const template = async (svc: string) => (await apps.readNamespacedDeployment({ name: `sys-${svc}`, namespace: NS })).spec!.template;
    const ring1 = await eventually('the generated key ring', async () => (await master()) || undefined);
    for (const svc of ['webhook', 'notifier'] as const) {
      await eventually(`${svc}'s derived ring`, async () => ((await derivedRing(svc)) === deriveSubkeys(parseKeyRing(ring1) as RingKey[], svc) ? true : undefined));
      const ringEnv = Object.fromEntries((await template(svc)).spec!.containers[0]!.env!.map((e) => [e.name, e.valueFrom?.secretKeyRef]));
      expect(ringEnv.SECRETS_SUBKEYS, svc).toEqual({ name: `sys-${svc}-keys`, key: 'SECRETS_SUBKEYS' });
    }
    for (const svc of SERVICES) expect((await template(svc)).spec!.containers[0]!.env!.map((e) => e.name), svc).not.toContain('SECRETS_KEYRING');
    const checksum = async (svc: string) => (await template(svc)).metadata?.annotations?.[SUBKEYS_CHECKSUM_ANNOTATION];
    const before = { webhook: await eventually('checksum', () => checksum('webhook')), gateway: JSON.stringify(await template('gateway')) };
    const ring2 = `rotated:${'ab'.repeat(32)},${ring1}`;
    const gen = await core.readNamespacedSecret({ name: 'sys-generated', namespace: NS });
    await core.replaceNamespacedSecret({ name: 'sys-generated', namespace: NS, body: { ...gen, data: { ...gen.data, SECRETS_KEYRING: Buffer.from(ring2).toString('base64') } } });
    await eventually('the derived rings follow the rotation', async () => ((await derivedRing('webhook')) === deriveSubkeys(parseKeyRing(ring2) as RingKey[], 'webhook') && (await derivedRing('notifier')) === deriveSubkeys(parseKeyRing(ring2) as RingKey[], 'notifier') ? true : undefined));
    await eventually('the webhook pods roll', async () => ((await checksum('webhook')) !== before.webhook ? true : undefined));
    expect(JSON.stringify(await template('gateway'))).toBe(before.gateway);
    await remove('sys');
    await stop(op);
  });

  it('lifecycle: refuses to adopt a foreign object, leaves HPA-owned replicas alone, and the CRD rejects what 1.20 can check', async () => {
    const op = await start(kc, 'life', 'lifecycle');
    await until(() => op.isLeader(), 'leadership');
    // A Deployment someone else made, with the name the operator would use.
    await apps.createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: 'life-webhook' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'theirs' } },
          template: { metadata: { labels: { app: 'theirs' } }, spec: { containers: [{ name: 'c', image: 'theirs:1' }] } },
        },
      },
    });
    await create('life', { ...(minimal('life', NS).spec as any), autoscaled: ['gateway'] });
    const owned = await eventually('Owned condition', async () => cond(await getTs('life'), 'Owned'));
    expect(owned).toMatchObject({ status: 'False', reason: 'ForeignObject' });
    expect(owned.message).toContain(`Deployment ${NS}/life-webhook`);
    const theirs = await apps.readNamespacedDeployment({ name: 'life-webhook', namespace: NS });
    expect(theirs.spec?.template.spec?.containers[0]?.image).toBe('theirs:1');
    expect(theirs.metadata?.ownerReferences).toBeUndefined();

    // The HPA's replica count survives reconciles: the operator does not own spec.replicas.
    await apps.patchNamespacedDeploymentScale({ name: 'life-gateway', namespace: NS, body: { spec: { replicas: 5 } } }, merge);
    await custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, namespace: NS, name: 'life', body: { spec: { config: { LOG_LEVEL: 'debug' } } } },
      merge,
    );
    await eventually('observedGeneration 2', async () => (await getTs('life')).status?.observedGeneration === 2);
    expect((await apps.readNamespacedDeployment({ name: 'life-gateway', namespace: NS })).spec?.replicas).toBe(5);

    // What 1.20's structural schema can enforce is rejected before anything is applied.
    const rejected = async (name: string, spec: Record<string, unknown>) => (await create(name, spec).then(() => 0, (e: any) => e.code as number));
    expect(await rejected('x'.repeat(43), minimal().spec as any)).toBe(422);
    expect(await rejected('badcron', { ...(minimal().spec as any), cron: { schedule: 'every 5 minutes' } })).toBe(422);
    expect(await rejected('badqty', { ...(minimal().spec as any), nats: { storage: 'lots' } })).toBe(422);
    await remove('life');
    await stop(op);
  });
});
