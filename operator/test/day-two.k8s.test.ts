/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/**
 * Issue 59 (Kubernetes day two) against a real kube-apiserver 1.20.2 with the garbage collector
 * (tools/k8s/cluster.ts): upgrades leave NATS alone, no path deletes a database, lost key material is
 * noticed and never silently replaced, Ready=False at 0 replicas. CloudNativePG cannot run here: a
 * stand-in CRD serves its `clusters.postgresql.cnpg.io` kind, and the test writes the Cluster status
 * its operator would. Last, a replica that loses the Lease for moments keeps its informers.
 */
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  V1MicroTime,
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
import { fileNats, testDatabase, until } from '../../tools/testenv/index.ts';
import { startGatewayProcess } from '../../tools/testenv/gateway-process.ts';
import { tcpProxy } from '../../tools/testenv/tcp-proxy.ts';
import { eventually } from '../../tools/testenv/wait.ts';
import { GROUP, PLURAL, VERSION } from '../src/crd.ts';
import { RETAINED_ANNOTATION, SUBKEYS_CHECKSUM_ANNOTATION } from '../src/desired.ts';
import { ACCEPT_KEYS_ANNOTATION } from '../src/keys.ts';
import { runOperator, type RunningOperator } from '../src/operator.ts';
import { fetchGatewayHealth, gatewayHealthUrl } from '../src/reconciler.ts';

const gate = requireBinaries(apiServerBinaries(), 'tools/k8s/ensure-apiserver.sh');
const NS = 'apps';
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** The operator's log lines (info and up), kept for the tests that wait on what it did. */
const logLines: { msg: string; key?: string }[] = [];
const log = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) });

/** Stand-in for CloudNativePG's CRD: the same group, version and kind, any spec, a status subresource. */
const CNPG_STANDIN_CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: clusters.postgresql.cnpg.io }
spec:
  group: postgresql.cnpg.io
  scope: Namespaced
  names: { kind: Cluster, listKind: ClusterList, plural: clusters, singular: cluster }
  versions:
    - name: v1
      served: true
      storage: true
      subresources: { status: {} }
      schema:
        openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true }
`;


describe.skipIf(!gate.run)('issue 59: day two against a real kube-apiserver', () => {
  const nats = fileNats();
  /** The loopback port of the real gateway the Database test runs; its Service URL is asked there (no kube-proxy here). */
  let gatewayPort = 0;
  let cluster: TestCluster;
  let kc: KubeConfig;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let op: RunningOperator;

  const ts = { group: GROUP, version: VERSION, plural: PLURAL, namespace: NS };
  const pg = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters', namespace: NS };
  const create = (name: string, spec: Record<string, unknown>) =>
    custom.createNamespacedCustomObject({ ...ts, body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'TaskService', metadata: { name }, spec } });
  const getTs = (name: string): Promise<any> => custom.getNamespacedCustomObject({ ...ts, name });
  const patchTs = (name: string, body: unknown) => custom.patchNamespacedCustomObject({ ...ts, name, body }, merge);
  const gone = async (read: () => Promise<unknown>) => read().then(() => false, (e: any) => e.code === 404);
  const cond = (o: any, type: string) => o?.status?.conditions?.find((c: any) => c.type === type);
  const getCluster = (name: string): Promise<any> => custom.getNamespacedCustomObject({ ...pg, name });
  const secret = (name: string) => core.readNamespacedSecret({ name, namespace: NS });
  const events = async (reason: string, kind: string, name: string) =>
    (await core.listNamespacedEvent({ namespace: NS })).items.filter((e) => e.reason === reason && e.involvedObject.kind === kind && e.involvedObject.name === name);
  const managed = (extra: Record<string, unknown> = {}) => ({ publicUrl: 'https://tasks.example.com', database: { managed: { instances: 1, ...extra } } });

  beforeAll(async () => {
    cluster = await startTestCluster();
    kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    apps = kc.makeApiClient(AppsV1Api);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    for (const crd of [loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_FILE, 'utf8')), loadYaml<V1CustomResourceDefinition>(CNPG_STANDIN_CRD)]) {
      await ext.createCustomResourceDefinition({ body: crd });
      await eventually(`CRD ${crd.metadata!.name} established`, async () => {
        const c = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
        return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True');
      });
    }
    await core.createNamespace({ body: { metadata: { name: NS } } });
    op = await runOperator(kc, {
      log,
      POD_NAMESPACE: NS,
      POD_NAME: 'day-two',
      LEASE_NAME: 'unused',
      LEADER_ELECT: false,
      LEASE_DURATION_SECONDS: 15,
      HEALTH_PORT: 0,
      WORKERS: 2,
      notReadyRecheckMs: 2000,
      keyCheckMs: 500,
      // Only the Database test's TaskService has a gateway to ask; the others get no Database check.
      gatewayHealth: async (url) =>
        gatewayPort && url === gatewayHealthUrl({ metadata: { name: 'dbcheck', namespace: NS } }) ? fetchGatewayHealth(`http://127.0.0.1:${gatewayPort}/api/health`) : undefined,
      databaseCheckMs: 500,
    });
  }, 180_000);

  afterAll(async () => {
    await op?.stop();
    await cluster?.stop();
  }, 60_000);

  it('spec.version: the services roll, the NATS StatefulSet keeps its pod template (no restart of the bus)', async () => {
    await create('up', { publicUrl: 'https://tasks.example.com', version: '1.4.2', database: { secretKeyRef: { name: 'pg-app' } } });
    const before = await eventually('NATS StatefulSet', () => apps.readNamespacedStatefulSet({ name: 'up-nats', namespace: NS }));
    await patchTs('up', { spec: { version: '1.5.0' } });
    await eventually('gateway at 1.5.0', async () => (await apps.readNamespacedDeployment({ name: 'up-gateway', namespace: NS })).spec?.template.spec?.containers[0]?.image?.endsWith(':1.5.0'));
    const after = await eventually('StatefulSet relabelled', async () => {
      const s = await apps.readNamespacedStatefulSet({ name: 'up-nats', namespace: NS });
      return s.metadata?.labels?.['app.kubernetes.io/version'] === '1.5.0' ? s : undefined;
    });
    // The API server bumps generation on any change of the spec (the pod template included): unchanged
    // means the StatefulSet controller has nothing to roll.
    expect(after.metadata?.generation).toBe(before.metadata?.generation);
    expect(after.spec?.template).toEqual(before.spec?.template);
    await custom.deleteNamespacedCustomObject({ ...ts, name: 'up' });
  });

  it('spec.nats.replicas 1 → 3 recreates the NATS StatefulSet once, waiting while the old one is still being deleted', async () => {
    await create('n13', { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } } });
    const one = await eventually('NATS StatefulSet', () => apps.readNamespacedStatefulSet({ name: 'n13-nats', namespace: NS }));
    // Held like a StatefulSet whose pods the garbage collector is still orphaning.
    const hold = 'test.tasks.example.io/hold';
    await apps.patchNamespacedStatefulSet({ name: 'n13-nats', namespace: NS, body: { metadata: { finalizers: [hold] } } }, merge);
    const linesBefore = logLines.length;
    const since = () => logLines.slice(linesBefore).filter((l) => l.key === `${NS}/n13`);
    await patchTs('n13', { spec: { nats: { replicas: 3 } } });
    await eventually('the old StatefulSet being deleted', async () => (await apps.readNamespacedStatefulSet({ name: 'n13-nats', namespace: NS })).metadata?.deletionTimestamp);
    // The operator comes back to it while it is held: three times, and never deletes it again.
    await until(() => since().filter((l) => l.msg.startsWith('StatefulSet still being deleted')).length >= 3, 'three reconciles of the held StatefulSet', 60_000);
    expect(since().filter((l) => l.msg.startsWith('StatefulSet deleted')).length).toBe(1);
    await apps.patchNamespacedStatefulSet({ name: 'n13-nats', namespace: NS, body: { metadata: { finalizers: null } } }, merge);
    const three = await eventually('the StatefulSet recreated for 3 servers', async () => {
      const s = await apps.readNamespacedStatefulSet({ name: 'n13-nats', namespace: NS }).catch(() => undefined);
      return s && !s.metadata?.deletionTimestamp && s.spec?.replicas === 3 ? s : undefined;
    });
    expect(three.metadata?.uid).not.toBe(one.metadata?.uid);
    expect(three.spec?.serviceName).not.toBe(one.spec?.serviceName);
    expect(since().filter((l) => l.msg.startsWith('StatefulSet deleted')).length).toBe(1);
    expect(await events('StatefulSetRecreated', 'TaskService', 'n13')).toHaveLength(1);
    await custom.deleteNamespacedCustomObject({ ...ts, name: 'n13' });
  });

  it('a managed database: the Cluster is owned by label, follows spec changes, reports its status; deleting the TaskService keeps it (Retain) and says so', async () => {
    await create('db', managed());
    const c1 = await eventually('Cluster', () => getCluster('db-db'));
    expect(c1.metadata.ownerReferences).toBeUndefined();
    let t = await eventually('Owned and Database conditions', async () => {
      const o = await getTs('db');
      return cond(o, 'Owned') && cond(o, 'Database') ? o : undefined;
    });
    expect(cond(t, 'Owned')).toMatchObject({ status: 'True' });
    expect(cond(t, 'Database')).toMatchObject({ status: 'False', reason: 'ClusterNotReady', message: expect.stringContaining('deletionPolicy Retain') });

    // What CloudNativePG would report once its instance runs: the watch on Clusters brings it in.
    await custom.patchNamespacedCustomObjectStatus({ ...pg, name: 'db-db', body: { status: { instances: 1, readyInstances: 1, phase: 'Cluster in healthy state', conditions: [{ type: 'Ready', status: 'True' }] } } }, merge);
    t = await eventually('Database=True', async () => {
      const o = await getTs('db');
      return cond(o, 'Database')?.status === 'True' ? o : undefined;
    });
    expect(cond(t, 'Database').message).toContain('Cluster db-db: 1/1 instances ready, Cluster in healthy state');

    // spec.database.managed changes reach the Cluster
    await patchTs('db', { spec: { database: { managed: { instances: 2 } } } });
    await eventually('instances 2 applied', async () => (await getCluster('db-db')).spec.instances === 2);
    await eventually('observed', async () => {
      const o = await getTs('db');
      return o.status?.observedGeneration === o.metadata.generation && cond(o, 'Database')?.message.includes('1/2 instances ready');
    });
    const keysBefore = (await secret('db-generated')).data;

    await custom.deleteNamespacedCustomObject({ ...ts, name: 'db' });
    // the garbage collector has done its part once the owned Deployments are gone
    await eventually('owned children collected', async () => (await apps.listNamespacedDeployment({ namespace: NS, labelSelector: 'tasks.example.io/owner-name=db' })).items.length === 0, 60_000);
    const kept = await eventually('Cluster marked as retained', async () => {
      const c = await getCluster('db-db');
      return c.metadata.annotations?.[RETAINED_ANNOTATION] ? c : undefined;
    });
    expect(kept.spec.instances).toBe(2);
    const [ev] = await eventually('Retained event', async () => {
      const e = await events('Retained', 'Cluster', 'db-db');
      return e.length ? e : undefined;
    });
    expect(ev!.message).toContain('its volumes are kept (deletionPolicy Retain)');
    expect((await secret('db-generated')).data).toEqual(keysBefore);

    // Created again under the same name: the Cluster and the keys that belong to its data come back.
    await create('db', managed({ instances: 2 }));
    await eventually('Cluster taken back', async () => {
      const o = await getTs('db');
      const c = await getCluster('db-db');
      return cond(o, 'Owned')?.status === 'True' && cond(o, 'Database') && !c.metadata.annotations?.[RETAINED_ANNOTATION];
    });
    expect((await secret('db-generated')).data).toEqual(keysBefore);
    expect(cond(await getTs('db'), 'KeyMaterial')).toMatchObject({ status: 'True', reason: 'KeysIntact' });

    // Switching to a referenced database does not prune a retained Cluster either.
    await patchTs('db', { spec: { database: { managed: null, secretKeyRef: { name: 'pg-app' } } } });
    await eventually('config points at the reference', async () => {
      const o = await getTs('db');
      return o.status?.observedGeneration === o.metadata.generation && !cond(o, 'Database');
    });
    expect((await getCluster('db-db')).metadata.deletionTimestamp).toBeUndefined();
    await custom.deleteNamespacedCustomObject({ ...ts, name: 'db' });
  });

  it('deletionPolicy Delete: the Cluster is owned and goes with the TaskService', async () => {
    await create('dbx', managed({ deletionPolicy: 'Delete' }));
    const c = await eventually('Cluster', () => getCluster('dbx-db'));
    expect(c.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'TaskService', name: 'dbx', controller: true })]);
    await eventually('generated Secret owned too', async () => (await secret('dbx-generated')).metadata?.ownerReferences?.[0]?.name === 'dbx');
    await custom.deleteNamespacedCustomObject({ ...ts, name: 'dbx' });
    await eventually('Cluster collected', () => gone(() => getCluster('dbx-db')), 60_000);
    await eventually('Secret collected', () => gone(() => secret('dbx-generated')), 60_000);
  });

  it('a lost generated Secret: noticed within seconds, a condition and an Event, nothing regenerated; restoring it or accepting that exact loss recovers', async () => {
    await create('keys', { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } } });
    const recorded = await eventually('checksums recorded', async () => {
      const o = await getTs('keys');
      return Object.keys(o.status?.keyChecksums ?? {}).length > 0 && cond(o, 'KeyMaterial')?.status === 'True' ? o.status.keyChecksums : undefined;
    });
    const original = (await secret('keys-generated')).data!;
    // every generated key (AUTH_SECRET, CRON_SECRET, TOTP_ENCRYPTION_KEY, NATS credentials, …) is recorded
    const generated = Object.keys(original).sort();
    expect(Object.keys(recorded).sort()).toEqual(generated);
    expect(generated).toEqual(expect.arrayContaining(['AUTH_SECRET', 'CRON_SECRET', 'TOTP_ENCRYPTION_KEY', 'NATS_USER', 'NATS_PASSWORD']));
    expect(JSON.stringify(recorded)).not.toContain(original.AUTH_SECRET); // checksums, never values
    // the derived rings' checksums in the webhook and notifier pod templates: a lost master must not roll those pods
    const ringChecksums = async () =>
      Promise.all(['webhook', 'notifier'].map(async (svc) => (await apps.readNamespacedDeployment({ name: `keys-${svc}`, namespace: NS })).spec?.template.metadata?.annotations?.[SUBKEYS_CHECKSUM_ANNOTATION]));
    const ringsBefore = await eventually('derived ring checksums in the pod templates', async () => ((await ringChecksums()).every(Boolean) ? ringChecksums() : undefined));

    const t0 = Date.now();
    await core.deleteNamespacedSecret({ name: 'keys-generated', namespace: NS });
    const lost = await eventually('KeyMaterial=False', async () => {
      const o = await getTs('keys');
      return cond(o, 'KeyMaterial')?.status === 'False' ? o : undefined;
    });
    const noticedMs = Date.now() - t0;
    console.log(`[day-two] lost generated Secret noticed after ${noticedMs} ms`);
    const c = cond(lost, 'KeyMaterial');
    expect(c.reason).toBe('KeysLost');
    const lostKeys = /lost: ([A-Z_, ]+)[;)]/.exec(c.message)![1]!.split(', ');
    expect(lostKeys.sort()).toEqual(generated);
    const fingerprint = /accept-keys=([0-9a-f]+)/.exec(c.message)![1]!;
    await eventually('Warning event', async () => (await events('KeysLost', 'TaskService', 'keys')).some((e) => e.type === 'Warning'));
    // a reconcile for another reason (a spec change) still regenerates nothing
    await patchTs('keys', { spec: { config: { LOG_LEVEL: 'debug' } } });
    await eventually('spec change reconciled', async () => {
      const o = await getTs('keys');
      return o.status?.observedGeneration === o.metadata.generation;
    });
    expect(await gone(() => secret('keys-generated'))).toBe(true);
    expect((await getTs('keys')).status.keyChecksums).toEqual(recorded);
    expect(await ringChecksums()).toEqual(ringsBefore);

    // restored from a backup: intact again
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'keys-generated' }, data: original } });
    await eventually('KeysIntact', async () => cond(await getTs('keys'), 'KeyMaterial')?.reason === 'KeysIntact');
    expect(await ringChecksums()).toEqual(ringsBefore);

    // lost again, and this time the admin accepts new values for exactly this loss
    await core.deleteNamespacedSecret({ name: 'keys-generated', namespace: NS });
    const again = await eventually('lost again', async () => {
      const o = await getTs('keys');
      return cond(o, 'KeyMaterial')?.status === 'False' ? cond(o, 'KeyMaterial') : undefined;
    });
    expect(again.message).toContain(`accept-keys=${fingerprint}`);
    await patchTs('keys', { metadata: { annotations: { [ACCEPT_KEYS_ANNOTATION]: fingerprint } } });
    const fresh = await eventually('regenerated', async () => {
      const s = await secret('keys-generated');
      return Object.keys(s.data ?? {}).length === generated.length ? s.data! : undefined;
    });
    expect(fresh.AUTH_SECRET).not.toBe(original.AUTH_SECRET);
    const accepted = await eventually('KeysAccepted', async () => {
      const o = await getTs('keys');
      return cond(o, 'KeyMaterial')?.reason === 'KeysAccepted' ? o : undefined;
    });
    expect(accepted.status.keyChecksums.AUTH_SECRET).not.toBe(recorded.AUTH_SECRET);
    // the annotation named that one loss: losing the new Secret is reported again, not regenerated
    await core.deleteNamespacedSecret({ name: 'keys-generated', namespace: NS });
    await eventually('a new loss is reported', async () => cond(await getTs('keys'), 'KeyMaterial')?.status === 'False');
    expect(await gone(() => secret('keys-generated'))).toBe(true);
    await custom.deleteNamespacedCustomObject({ ...ts, name: 'keys' });
  });

  it('Database says whether the services reach the database, as the gateway\'s /api/health does: a real gateway whose database goes away behind a proxy (issue 59 #6)', async () => {
    const databaseUrl = await testDatabase('dbcheck');
    const db = new URL(databaseUrl);
    const proxy = await tcpProxy('127.0.0.1', { host: db.hostname, port: Number(db.port) });
    const proxied = new URL(databaseUrl);
    proxied.port = String(proxy.port);
    const gateway = await startGatewayProcess({ databaseUrl: proxied.toString(), natsUrl: nats.url() }).catch(async (err: unknown) => {
      await proxy.close();
      throw err;
    });
    const database = async () => cond(await getTs('dbcheck'), 'Database');
    try {
      gatewayPort = gateway.port;
      await create('dbcheck', { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } } });
      const url = 'http://dbcheck-gateway.apps.svc:3000/api/health';
      const up = await eventually('Database=True', async () => ((await database())?.status === 'True' ? database() : undefined));
      expect(up).toMatchObject({ reason: 'Reachable', message: `the services reach the database (GET ${url} answered 200 (status ok))` });

      // The database goes away; no Kubernetes object changes, the periodic check notices.
      await proxy.outage();
      const down = await eventually('Database=False', async () => ((await database())?.status === 'False' ? database() : undefined));
      expect(down).toMatchObject({ reason: 'Unreachable', message: `the services cannot reach the database: GET ${url} answered 503 (status error)` });
      await eventually('a Warning event saying so', async () => (await events('Unreachable', 'TaskService', 'dbcheck')).some((e) => e.type === 'Warning'));

      await proxy.restore();
      await eventually('Database=True again', async () => (await database())?.status === 'True');
    } finally {
      gatewayPort = 0;
      await gateway.stop();
      await proxy.close();
      await custom.deleteNamespacedCustomObject({ ...ts, name: 'dbcheck' }).catch(() => undefined);
    }
  }, 180_000);

  it('Ready=False while services are scaled to 0; /scale scales the gateway', async () => {
    const zero = Object.fromEntries(['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'].map((s) => [s, 0]));
    await create('zero', { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } }, replicas: zero });
    const t = await eventually('status', async () => {
      const o = await getTs('zero');
      return cond(o, 'Ready') ? o : undefined;
    });
    expect(cond(t, 'Ready')).toMatchObject({ status: 'False', reason: 'ServicesUnavailable', message: expect.stringContaining('gateway (0 replicas)') });
    expect(t.status.readyServices).toBe('0/6');

    // /scale scales the gateway (kubectl scale tsvc zero --replicas=3; an HPA can target it too)
    await custom.patchNamespacedCustomObjectScale({ ...ts, name: 'zero', body: { spec: { replicas: 3 } } }, merge);
    expect((await getTs('zero')).spec.replicas.gateway).toBe(3);
    await eventually('gateway Deployment scaled', async () => (await apps.readNamespacedDeployment({ name: 'zero-gateway', namespace: NS })).spec?.replicas === 3);
    const scale: any = await custom.getNamespacedCustomObjectScale({ ...ts, name: 'zero' });
    expect(scale.status.selector).toBe('app.kubernetes.io/name=task-service,app.kubernetes.io/instance=zero,app.kubernetes.io/component=gateway');
    await custom.deleteNamespacedCustomObject({ ...ts, name: 'zero' });
  });

  it('a short loss of leadership: reconciling stops at once, the informers are kept, and the leader back resumes with the same controller', async () => {
    await op.stop(); // from here on one electing replica
    const leases = kc.makeApiClient(CoordinationV1Api);
    const elect = await runOperator(kc, {
      log,
      POD_NAMESPACE: NS,
      POD_NAME: 'elect',
      LEASE_NAME: 'day-two',
      LEADER_ELECT: true,
      LEASE_DURATION_SECONDS: 3,
      HEALTH_PORT: 0,
      WORKERS: 2,
      retryPeriodMs: 300,
      keepInformersMs: 60_000,
    });
    try {
      await eventually('leading', async () => elect.isLeader());
      const before = elect.controller();
      // Another holder takes the Lease (as after an API hiccup longer than the renew window).
      // (a renewal between the read and the replace makes it 409: read again)
      await eventually('Lease taken over', async () => {
        const lease = await leases.readNamespacedLease({ name: 'day-two', namespace: NS });
        await leases.replaceNamespacedLease({
          name: 'day-two',
          namespace: NS,
          body: { ...lease, spec: { ...lease.spec, holderIdentity: 'someone-else', leaseDurationSeconds: 3, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() } },
        });
        return true;
      });
      await eventually('stepped down', async () => !elect.isLeader());
      await create('during', { publicUrl: 'https://tasks.example.com', database: { secretKeyRef: { name: 'pg-app' } } });
      // the other holder never renews: the Lease expires and the replica leads again
      await eventually('leading again', async () => elect.isLeader(), 60_000);
      expect(elect.controller()).toBe(before);
      await eventually('the TaskService created meanwhile is reconciled', async () => (await getTs('during')).status?.observedGeneration === 1);
      await custom.deleteNamespacedCustomObject({ ...ts, name: 'during' });
    } finally {
      await elect.stop();
    }
  });
});
