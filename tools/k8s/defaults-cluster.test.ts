/**
 * Issue 59's acceptance on the one-node cluster (node.ts) running the operator's DEFAULTS: the
 * statefulset / persistentvolume-binder controllers, cluster DNS (dnsmasq stand-in for CoreDNS), the
 * default StorageClass over local volumes, the operator-run NATS (image from Debian's nats-server), a
 * managed database (CloudNativePG Cluster, served by the named stand-in cnpg-standin.ts), the generated
 * Secret, the cron job not suspended. One cluster start for every test; each acceptance bullet is its own
 * `it`, in an order where each leaves the system as the next needs it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tasksvc/runtime';
import { until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { startCnpgStandIn, HIBERNATION_ANNOTATION, type CnpgStandIn } from './cnpg-standin.ts';
import { APP_NAMESPACE, applyDefaultsTaskService, defaultsTaskService, installOperator, kubectlApply, OPERATOR_NAMESPACE, TS_NAME } from './deploy.ts';
import { createTask, eventsOf, requestsDuring as requestLoop } from './request-loop.ts';
import { IMAGE_TAG, imageName, imagesMissing, NATS_IMAGE, PAUSE_IMAGE, podman, POSTGRES_IMAGE, skipOrFail, TARGETS } from './images.ts';
import { nodeClusterMissing, STORAGE_CLASS, startNodeCluster, type NodeCluster } from './node.ts';

const missing = [...(await nodeClusterMissing()), (await imagesMissing()) || []].flat();
if (!missing.length) {
  for (const img of [NATS_IMAGE, POSTGRES_IMAGE]) await podman('image', 'exists', img).catch(() => missing.push(`${img} (run tools/k8s/build-images.sh)`));
}
const skip = skipOrFail(missing.length ? `one-node cluster on the operator's defaults: ${missing.join('; ')}` : '');
const log = (l: string) => console.log(`[defaults-cluster] ${l}`);
/** spec.version after the upgrade: every service image under a second tag (same content, new pods). */
const UPGRADE = 'upgrade';
const upgradeImage = (t: string) => imageName(t).replace(/:[^:]+$/, `:${UPGRADE}`);
const DB_CLUSTER = `${TS_NAME}-db`;
const GENERATED_SECRET = `${TS_NAME}-generated`;

type Pod = {
  metadata: { name: string; uid: string; labels?: Record<string, string>; deletionTimestamp?: string };
  status: { phase?: string; conditions?: { type: string; status: string }[]; containerStatuses?: { name: string; restartCount: number }[] };
};
type Condition = { type: string; status: string; reason: string; message: string };

describe.skipIf(skip)("one-node cluster on the operator's defaults (issue 59)", () => {
  let cluster: NodeCluster | undefined;
  let standIn: CnpgStandIn | undefined;
  let pool: Pool | undefined;
  let gatewayUrl = '';
  let authorization = '';
  let taskId = '';
  let version = IMAGE_TAG;

  const c = () => cluster as NodeCluster;
  const json = async <T>(...args: string[]): Promise<T> => JSON.parse(await c().kubectl(...args, '-o', 'json')) as T;
  // live pods only: not terminating, and not the cron job's finished runs
  const pods = async () =>
    (await json<{ items: Pod[] }>('get', 'pods', '-n', APP_NAMESPACE)).items.filter((p) => !p.metadata.deletionTimestamp && p.status.phase !== 'Succeeded' && p.status.phase !== 'Failed');
  const ready = (p: Pod) => p.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') ?? false;
  const component = (p: Pod) => p.metadata.labels?.['app.kubernetes.io/component'] ?? (p.metadata.labels?.['cnpg.io/cluster'] ? 'db' : '');
  const isService = (p: Pod) => ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'].includes(component(p));
  const restarts = (p: Pod) => (p.status.containerStatuses ?? []).reduce((n, s) => n + s.restartCount, 0);
  const conditions = async () => (await json<{ status?: { conditions?: Condition[] } }>('get', 'taskservice', TS_NAME, '-n', APP_NAMESPACE)).status?.conditions ?? [];
  const condition = async (type: string) => (await conditions()).find((x) => x.type === type);
  const describeAll = async () =>
    `${await c().kubectl('get', 'pods,pvc,statefulsets,taskservices', '-A', '-o', 'wide').catch((e: Error) => e.message)}\n${await c()
      .kubectl('get', 'taskservice', TS_NAME, '-n', APP_NAMESPACE, '-o', 'jsonpath={.status.conditions}')
      .catch((e: Error) => e.message)}`;
  const want = { gateway: 2, auth: 1, tasks: 1, notifier: 1, webhook: 1, scheduler: 1, nats: 1, db: 1 } as Record<string, number>;
  const allReady = async () => {
    const ps = await pods();
    return Object.entries(want).every(([name, n]) => ps.filter((p) => component(p) === name && ready(p)).length >= n);
  };
  type Deployment = { metadata: { name: string; generation?: number }; spec: { replicas?: number }; status: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; readyReplicas?: number } };
  /** every Deployment's controller saw its latest template and runs exactly that many updated, Ready pods */
  const rolledOut = async () =>
    (await json<{ items: Deployment[] }>('get', 'deployments', '-n', APP_NAMESPACE)).items.every(
      (d) => (d.status.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) && [d.status.replicas ?? 0, d.status.updatedReplicas ?? 0, d.status.readyReplicas ?? 0].every((n) => n === (d.spec.replicas ?? 1)),
    );
  type Meta = { uid: string; ownerReferences?: { kind: string; name: string; uid: string }[]; annotations?: Record<string, string> };
  /** an object's metadata, or undefined once it is gone */
  const metadataOf = (...what: string[]) =>
    c()
      .kubectl('get', ...what, '-n', APP_NAMESPACE, '-o', 'json')
      .then(
        (o) => (JSON.parse(o) as { metadata: Meta }).metadata,
        (e: Error) => {
          if (/NotFound/.test(e.message)) return undefined;
          throw e;
        },
      );
  const secretData = async () => (await json<{ data: Record<string, string> }>('get', 'secret', GENERATED_SECRET, '-n', APP_NAMESPACE)).data;

  beforeAll(async () => {
    const t0 = Date.now();
    for (const t of TARGETS) await podman('tag', imageName(t), upgradeImage(t));
    cluster = await startNodeCluster({ log, images: [...TARGETS.map(imageName), ...TARGETS.map(upgradeImage), PAUSE_IMAGE, NATS_IMAGE, POSTGRES_IMAGE] });
    log(`cluster up in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    standIn = await startCnpgStandIn(cluster, (l) => log(`cnpg stand-in: ${l}`));
    const t1 = Date.now();
    await installOperator(cluster);
    log(`operator chart installed and Ready in ${((Date.now() - t1) / 1000).toFixed(0)} s`);
    await applyDefaultsTaskService(cluster);
    const t2 = Date.now();
    await until(allReady, 'gateway ×2, auth, tasks, notifier, webhook, scheduler, NATS and the database pods Ready', 480_000).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await describeAll()}\n${await c().kubectl('describe', 'pods', '-n', APP_NAMESPACE).catch(() => '')}`);
    });
    log(`TaskService on the defaults: every pod Ready in ${((Date.now() - t2) / 1000).toFixed(0)} s`);
    const ip = await c().kubectl('get', 'service', `${TS_NAME}-gateway`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.spec.clusterIP}');
    gatewayUrl = `http://${ip}:3000`;
    await until(() => fetch(`${gatewayUrl}/api/health`).then((r) => r.status === 200, () => false), `the gateway Service ${gatewayUrl} answering 200`, 120_000);
    // the test seeds its user straight into the database, through the stand-in's -rw Service
    const uri = new URL(Buffer.from(await c().kubectl('get', 'secret', `${DB_CLUSTER}-app`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.data.uri}'), 'base64').toString());
    uri.hostname = await c().kubectl('get', 'service', `${DB_CLUSTER}-rw`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.spec.clusterIP}');
    pool = createPool(uri.toString(), createLogger('k8s-defaults-test', 'silent'));
    ({ authorization } = await createUserWithApiKey(pool));
  }, 1_200_000);

  afterAll(async () => {
    standIn?.stop();
    await pool?.end();
    for (const t of TARGETS) await podman('untag', upgradeImage(t), upgradeImage(t)).catch(() => undefined);
    const problems = await cluster?.stop();
    if (problems?.length) console.error(`[defaults-cluster] host not restored:\n${problems.join('\n')}`);
  }, 180_000);

  it('runs the defaults: NATS StatefulSet on a bound local volume, the stand-in database, the generated Secret, the cron job not suspended', async () => {
    const pvcs = await json<{ items: { metadata: { name: string }; spec: { storageClassName?: string }; status: { phase: string } }[] }>('get', 'pvc', '-n', APP_NAMESPACE);
    expect(pvcs.items.map((p) => [p.metadata.name, p.spec.storageClassName, p.status.phase]).sort()).toEqual([
      [`data-${TS_NAME}-nats-0`, STORAGE_CLASS, 'Bound'],
      [`pgdata-${DB_CLUSTER}-0`, STORAGE_CLASS, 'Bound'],
    ]);
    const cron = await json<{ items: { spec: { suspend?: boolean; schedule: string } }[] }>('get', 'cronjobs', '-n', APP_NAMESPACE);
    expect(cron.items.map((j) => j.spec.suspend ?? false)).toEqual([false]);
    expect(await c().kubectl('get', 'secret', GENERATED_SECRET, '-n', APP_NAMESPACE, '-o', 'jsonpath={.data.NATS_PASSWORD}')).not.toBe('');
    taskId = await createTask(gatewayUrl, authorization, 'created on the defaults');
    const db = await until(async () => (await condition('Database'))?.status === 'True' && condition('Database'), 'Database=True', 60_000);
    log(`Database: ${db ? `${db.reason}: ${db.message}` : '?'}`);
    expect(await condition('Ready')).toMatchObject({ status: 'True' });
  }, 120_000);

  /** GET /api/tasks/:id through the gateway Service in a loop while `change` happens, until `settled`. */
  const requestsDuring = (change: () => Promise<unknown>, settled: () => Promise<boolean>, what: string, limitMs?: number) =>
    requestLoop(`${gatewayUrl}/api/tasks/${taskId}`, authorization, change, settled, what, { limitMs, explain: () => eventsOf(c(), APP_NAMESPACE) });

  it('a spec.version change rolls every service under a request loop with 0 failed requests and does not restart NATS', async () => {
    const before = await pods();
    const nats = before.find((p) => component(p) === 'nats') as Pod;
    const services = new Set(before.filter(isService).map((p) => p.metadata.name));
    version = UPGRADE;
    const { requests, failures } = await requestsDuring(
      () => kubectlApply(c(), defaultsTaskService({ version })),
      async () => {
        const ps = await pods();
        const svc = ps.filter(isService);
        return svc.every((p) => ready(p) && !services.has(p.metadata.name)) && (await allReady());
      },
      'every service pod replaced by a Ready one of the new version',
    );
    log(`spec.version ${IMAGE_TAG} → ${UPGRADE}: ${requests} requests, ${failures.length} failed`);
    expect(requests).toBeGreaterThan(10);
    expect(failures).toEqual([]);
    const natsAfter = (await pods()).find((p) => component(p) === 'nats') as Pod;
    expect([natsAfter.metadata.uid, restarts(natsAfter)]).toEqual([nats.metadata.uid, restarts(nats)]);
    expect(await c().kubectl('get', 'deployment', `${TS_NAME}-gateway`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.spec.template.spec.containers[0].image}')).toBe(upgradeImage('gateway'));
  }, 420_000);

  it('Ready=False while a service has 0 replicas, naming it; True again once it is back', async () => {
    await kubectlApply(c(), defaultsTaskService({ version, replicas: { scheduler: 0 } }));
    const notReady = await until(async () => {
      const r = await condition('Ready');
      return r?.status === 'False' && r;
    }, 'Ready=False with the scheduler at 0 replicas', 60_000);
    log(`at 0 replicas: Ready=False ${notReady.reason}: ${notReady.message}`);
    expect(notReady.message).toMatch(/scheduler/);
    await kubectlApply(c(), defaultsTaskService({ version }));
    await until(async () => (await condition('Ready'))?.status === 'True' && (await allReady()), 'Ready=True with the scheduler back', 180_000);
  }, 300_000);

  it('deleting the generated Secret: a KeyMaterial condition and a Warning Event within seconds, no key silently replaced; restoring it clears them', async () => {
    const saved = await json<{ metadata: Record<string, unknown>; data: Record<string, string>; type?: string }>('get', 'secret', GENERATED_SECRET, '-n', APP_NAMESPACE);
    const t0 = Date.now();
    await c().kubectl('delete', 'secret', GENERATED_SECRET, '-n', APP_NAMESPACE);
    const lost = await until(async () => {
      const k = await condition('KeyMaterial');
      return k?.status === 'False' && k;
    }, 'KeyMaterial=False after the Secret was deleted', 60_000).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await describeAll()}`);
    });
    const noticedS = (Date.now() - t0) / 1000;
    log(`generated Secret deleted: KeyMaterial=False ${lost.reason} after ${noticedS.toFixed(1)} s: ${lost.message}`);
    expect(lost.reason).toBe('KeysLost');
    const events = await until(
      async () => (await c().kubectl('get', 'events', '-n', APP_NAMESPACE, '--field-selector', 'involvedObject.kind=TaskService,type=Warning', '-o', 'jsonpath={range .items[*]}{.reason}{"\\n"}{end}')).split('\n').filter((r) => r === 'KeysLost'),
      'a Warning Event KeysLost',
      30_000,
    );
    expect(events.length).toBeGreaterThan(0);
    // nothing regenerated it: the Secret stays absent (or, if present, holds none of the lost keys)
    const now = await c().kubectl('get', 'secret', GENERATED_SECRET, '-n', APP_NAMESPACE, '-o', 'json').then(
      (s) => (JSON.parse(s) as { data?: Record<string, string> }).data ?? {},
      () => undefined,
    );
    for (const [k, v] of Object.entries(now ?? {})) expect(v, k).toBe(saved.data[k]);
    // the services keep serving with the keys they started with
    expect((await fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } })).status).toBe(200);
    // recovery as documented: restore the Secret from a backup with the old values
    await kubectlApply(c(), { apiVersion: 'v1', kind: 'Secret', type: saved.type, metadata: { name: GENERATED_SECRET, namespace: APP_NAMESPACE, labels: saved.metadata.labels }, data: saved.data });
    const intact = await until(async () => {
      const k = await condition('KeyMaterial');
      return k?.status === 'True' && k;
    }, 'KeyMaterial=True after the restore', 60_000);
    log(`restored: KeyMaterial=True ${intact.reason}`);
  }, 240_000);

  it('a second loss, accepted as documented (the accept-keys command from the condition, then both rollout restarts): new keys, and a request with an API key works again', async () => {
    const before = await secretData();
    const servicePods = new Set((await pods()).filter(isService).map((p) => p.metadata.name));
    const natsUid = ((await pods()).find((p) => component(p) === 'nats') as Pod).metadata.uid;
    await c().kubectl('delete', 'secret', GENERATED_SECRET, '-n', APP_NAMESPACE);
    const lost = await until(async () => {
      const k = await condition('KeyMaterial');
      return k?.status === 'False' && k;
    }, 'KeyMaterial=False after the second deletion', 60_000);
    // as a user would: the command the condition's message ends with, run in the TaskService's namespace
    const command = /kubectl (annotate taskservice \S+ \S+=[0-9a-f]+ --overwrite)$/.exec(lost.message)?.[1];
    expect(command, lost.message).toBeDefined();
    log(`second loss: ${lost.reason}; running: kubectl ${command} -n ${APP_NAMESPACE}`);
    const t0 = Date.now();
    await c().kubectl(...(command as string).split(' '), '-n', APP_NAMESPACE);
    const accepted = await until(async () => {
      const k = await condition('KeyMaterial');
      return k?.status === 'True' && k;
    }, 'KeyMaterial=True after accept-keys', 60_000);
    log(`accepted after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${accepted.reason}: ${accepted.message}`);
    // KeysAccepted, or already KeysIntact when the next 5 s check found the new values recorded; the values below show they are new
    expect(['KeysAccepted', 'KeysIntact']).toContain(accepted.reason);
    // every lost key generated anew, none of the old values came back
    const after = await secretData();
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    for (const k of Object.keys(before).filter((k) => k !== 'NATS_USER')) expect(after[k], k).not.toBe(before[k]);
    // the documented restarts (label instance=<TaskService name>; this TaskService is task-service, not tasks)
    const t1 = Date.now();
    await c().kubectl('rollout', 'restart', 'statefulset', `${TS_NAME}-nats`, '-n', APP_NAMESPACE);
    await c().kubectl('rollout', 'restart', 'deployment', '-l', `app.kubernetes.io/instance=${TS_NAME}`, '-n', APP_NAMESPACE);
    await until(
      async () => {
        const ps = await pods();
        const nats = ps.filter((p) => component(p) === 'nats');
        return (
          nats.length === 1 &&
          nats[0]!.metadata.uid !== natsUid &&
          ps.filter(isService).every((p) => !servicePods.has(p.metadata.name)) &&
          (await allReady()) &&
          (await rolledOut())
        );
      },
      'a new NATS pod and every service pod replaced by a Ready one',
      300_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await describeAll()}`);
    });
    log(`restarted with the new keys: every pod Ready ${((Date.now() - t1) / 1000).toFixed(0)} s after the rollout restarts`);
    // the API key is a SHA-256 in the database, not signed with AUTH_SECRET: it still works, through the bus with the new NATS password
    await until(() => fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } }).then((r) => r.status === 200, () => false), 'GET the task with the API key after the restarts', 60_000);
    expect(await createTask(gatewayUrl, authorization, 'created after new keys were accepted')).toMatch(/\S/);
    // KeysAccepted until the next check finds the new values recorded: KeysIntact
    expect(await condition('KeyMaterial')).toMatchObject({ status: 'True' });
    await until(async () => (await condition('Ready'))?.status === 'True', 'Ready=True after the restarts', 60_000);
  }, 420_000);

  it('a 60 s database outage: no liveness restart, and the first 200 after the database is back is measured', async () => {
    // from a settled system: a rollout still replacing pods would remove pods this test counts restarts of
    await until(rolledOut, 'every Deployment rolled out', 180_000);
    const servicePods = (await pods()).filter(isService);
    const restartsBefore = Object.fromEntries(servicePods.map((p) => [p.metadata.name, restarts(p)]));
    await c().kubectl('annotate', 'clusters.postgresql.cnpg.io', DB_CLUSTER, '-n', APP_NAMESPACE, `${HIBERNATION_ANNOTATION}=on`, '--overwrite');
    await until(async () => !(await pods()).some((p) => component(p) === 'db'), 'the database pod gone', 90_000);
    const downAt = Date.now();
    const failing = await until(
      () => fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } }).then((r) => r.status !== 200 && r.status, () => 'error'),
      'a request failing while the database is down',
      30_000,
    );
    log(`database down: the API answers ${failing}`);
    // the outage lasts 60 s: wait for the operator's Database condition to say so, and for the time to pass
    await until(async () => Date.now() - downAt >= 60_000 && (await condition('Database'))?.status === 'False', 'the Database condition False and 60 s of outage', 120_000);
    const dbDown = await condition('Database');
    log(`after 60 s: Database=False ${dbDown?.reason}: ${dbDown?.message}`);
    await c().kubectl('annotate', 'clusters.postgresql.cnpg.io', DB_CLUSTER, '-n', APP_NAMESPACE, `${HIBERNATION_ANNOTATION}=off`, '--overwrite');
    const backAt = await until(async () => (await pods()).some((p) => component(p) === 'db' && ready(p)) && Date.now(), 'the database pod Ready again', 120_000);
    const firstOk = await until<number>(
      () => fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } }).then((r) => r.status === 200 && Date.now(), () => false),
      'the first 200 after the database returned',
      120_000,
    );
    const afterS = (firstOk - backAt) / 1000;
    log(`database back: first 200 ${afterS.toFixed(1)} s after its pod was Ready (issue 59: within 15 s)`);
    const after = (await pods()).filter((p) => p.metadata.name in restartsBefore);
    expect(Object.fromEntries(after.map((p) => [p.metadata.name, restarts(p)]))).toEqual(restartsBefore);
    await until(async () => (await condition('Database'))?.status === 'True', 'Database=True again', 60_000);
  }, 420_000);

  it('spec.nats.replicas 1 → 3 recreates the NATS StatefulSet once (Event StatefulSetRecreated): three servers Ready, the API answers', async () => {
    const recreations = async () =>
      (await c().kubectl('get', 'events', '-n', APP_NAMESPACE, '--field-selector', 'reason=StatefulSetRecreated', '-o', 'jsonpath={range .items[*]}{.count} {.message}{"\\n"}{end}')).split('\n').filter(Boolean);
    expect(await recreations()).toEqual([]);
    const t0 = Date.now();
    await kubectlApply(c(), defaultsTaskService({ version, natsReplicas: 3 }));
    await until(async () => (await recreations()).length > 0, 'an Event StatefulSetRecreated', 120_000);
    await until(
      async () =>
        (await c().kubectl('get', 'statefulset', `${TS_NAME}-nats`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.spec.serviceName} {.status.readyReplicas}').catch(() => '')) === `${TS_NAME}-nats-routes 3` &&
        (await condition('Ready'))?.status === 'True' &&
        (await allReady()),
      'the new NATS StatefulSet with three servers Ready and the TaskService Ready',
      360_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await describeAll()}\n${(await recreations()).join('\n')}`);
    });
    log(`NATS 1 → 3: ${((Date.now() - t0) / 1000).toFixed(0)} s; events: ${(await recreations()).join(' | ')}`);
    expect(await recreations()).toEqual([expect.stringMatching(/^1 task-service-nats: serviceName/)]);
    const status = await until(() => fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } }).then((r) => r.status === 200 && r.status, () => false), 'GET a task through the 3-server bus', 60_000);
    expect(status).toBe(200);
  }, 540_000);

  it('deleting the TaskService keeps the managed database (deletionPolicy Retain by default) and says so', async () => {
    await c().kubectl('delete', 'taskservice', TS_NAME, '-n', APP_NAMESPACE, '--wait', '--timeout=180s');
    await until(async () => !(await pods()).some((p) => ['gateway', 'auth', 'tasks'].includes(component(p))), 'the service pods gone', 180_000);
    expect(await c().kubectl('get', 'clusters.postgresql.cnpg.io', DB_CLUSTER, '-n', APP_NAMESPACE, '-o', 'name')).toBe(`cluster.postgresql.cnpg.io/${DB_CLUSTER}`);
    expect(await c().kubectl('get', 'pvc', `pgdata-${DB_CLUSTER}-0`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.status.phase}')).toBe('Bound');
    const retained = await until(
      async () =>
        (await c().kubectl('get', 'events', '-n', APP_NAMESPACE, '--field-selector', 'reason=Retained', '-o', 'jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name}: {.message}{"\\n"}{end}'))
          .split('\n')
          .find((l) => l.startsWith(`Cluster/${DB_CLUSTER}:`)),
      'an Event Retained on the database Cluster',
      60_000,
    );
    log(retained);
    expect(retained).toMatch(/deletionPolicy Retain/);
    // the data is still there: the test's user row, read through the kept database
    expect((await (pool as Pool).query('select count(*)::int as n from auth.users')).rows[0]).toMatchObject({ n: expect.any(Number) });
  }, 420_000);

  it('a TaskService created again takes the retained Cluster and Secret back; with deletionPolicy Delete set, deleting it collects both', async () => {
    const cluster = (await metadataOf('clusters.postgresql.cnpg.io', DB_CLUSTER)) as Meta;
    const secret = (await metadataOf('secret', GENERATED_SECRET)) as Meta;
    expect([cluster.ownerReferences ?? [], secret.ownerReferences ?? []]).toEqual([[], []]);
    const keys = await secretData();
    // the test's connection goes with the database at the end
    await pool?.end();
    pool = undefined;
    // created again from the same manifest (the last one applied)
    const t0 = Date.now();
    await applyDefaultsTaskService(c(), { version, natsReplicas: 3 });
    const takenBack = await until(async () => {
      const [db, km] = [await condition('Database'), await condition('KeyMaterial')];
      return db?.status === 'True' && km?.status === 'True' && [db, km];
    }, 'Database=True and KeyMaterial=True on the TaskService created again', 120_000);
    log(`created again: ${takenBack.map((x) => `${x.type}=${x.status} ${x.reason}: ${x.message}`).join(' | ')} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    expect(takenBack[1]!.reason).toBe('KeysIntact');
    expect((await metadataOf('clusters.postgresql.cnpg.io', DB_CLUSTER))?.uid).toBe(cluster.uid);
    expect(await secretData()).toEqual(keys);
    // the note that a deleted TaskService left the Secret behind is taken off once it is used again
    await until(async () => !(await metadataOf('secret', GENERATED_SECRET))?.annotations?.['tasks.example.io/retained'], 'the retained annotation off the Secret', 60_000);
    // set deletionPolicy: Delete: the Cluster and the Secret get an owner reference to the TaskService
    const tsUid = ((await metadataOf('taskservice', TS_NAME)) as Meta).uid;
    await kubectlApply(c(), defaultsTaskService({ version, natsReplicas: 3, deletionPolicy: 'Delete' }));
    const ownedBy = async (...what: string[]) => ((await metadataOf(...what))?.ownerReferences ?? []).some((o) => o.kind === 'TaskService' && o.uid === tsUid);
    await until(
      async () => (await ownedBy('clusters.postgresql.cnpg.io', DB_CLUSTER)) && (await ownedBy('secret', GENERATED_SECRET)),
      'owner references to the TaskService on the Cluster and the generated Secret',
      60_000,
    );
    // the condition follows at the end of that reconcile
    const db = await until(async () => {
      const d = await condition('Database');
      return /deletionPolicy Delete/.test(d?.message ?? '') && d;
    }, 'the Database condition naming deletionPolicy Delete', 60_000);
    log(`deletionPolicy Delete: Cluster and Secret owned ${((Date.now() - t0) / 1000).toFixed(1)} s after the TaskService was created again; Database: ${db?.message}`);
    const t1 = Date.now();
    await c().kubectl('delete', 'taskservice', TS_NAME, '-n', APP_NAMESPACE, '--wait', '--timeout=180s');
    // the garbage collector (kube-controller-manager) deletes them, and the Cluster's own children with it
    await until(
      async () =>
        (await metadataOf('clusters.postgresql.cnpg.io', DB_CLUSTER)) === undefined &&
        (await metadataOf('secret', GENERATED_SECRET)) === undefined &&
        (await metadataOf('secret', `${DB_CLUSTER}-app`)) === undefined &&
        (await metadataOf('statefulset', DB_CLUSTER)) === undefined,
      'the Cluster, the generated Secret and the Cluster-owned Secret and StatefulSet collected',
      180_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await c().kubectl('get', 'clusters.postgresql.cnpg.io,secrets,statefulsets', '-n', APP_NAMESPACE, '-o', 'wide').catch((x: Error) => x.message)}`);
    });
    // the stand-in's volume comes from a claim template, which nothing owns (CloudNativePG owns its PVCs): it stays
    const pvc = await c().kubectl('get', 'pvc', `pgdata-${DB_CLUSTER}-0`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.status.phase}').catch(() => 'gone');
    log(`TaskService deleted with deletionPolicy Delete: Cluster and Secret collected ${((Date.now() - t1) / 1000).toFixed(1)} s after the delete was issued (stand-in's PVC: ${pvc})`);
    await c().helm('uninstall', 'tso', '--namespace', OPERATOR_NAMESPACE, '--wait', '--timeout', '5m');
  }, 420_000);

  it('stopping the cluster leaves the host as it was', async () => {
    standIn?.stop();
    await pool?.end();
    pool = undefined;
    expect(await c().stop()).toEqual([]);
  }, 180_000);
});
