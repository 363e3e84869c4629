/**
 * The Kubernetes path for real, on a one-node cluster (node.ts) with the images build-images.sh built:
 * the operator chart installed, a TaskService whose pods reach the run's PostgreSQL and NATS, the API
 * answering through the gateway's Service, spec changes rolled out with no failed request, `helm
 * uninstall` removing everything, and the host left exactly as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tasksvc/runtime';
import { sharedNatsUrl, testDatabase, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { APP_NAMESPACE, applyTaskService, forward, installOperator, kubectlApply, OPERATOR_NAMESPACE, taskService, TS_NAME } from './deploy.ts';
import { imageName, imagesMissing, PAUSE_IMAGE, podman, skipOrFail, TARGETS } from './images.ts';
import { nodeClusterMissing, startNodeCluster, NODE_IP, type NodeCluster } from './node.ts';

const missing = [...(await nodeClusterMissing()), (await imagesMissing()) || []].flat();
const skip = skipOrFail(missing.length ? `one-node cluster test: ${missing.join('; ')}` : '');
const log = (l: string) => console.log(`[node-cluster] ${l}`);
// The rollout switches the gateway to the same image under a second name: only its pods change.
const ROLLOUT_IMAGE = imageName('gateway').replace(/:[^:]+$/, ':rollout');

describe.skipIf(skip)('one-node cluster', () => {
  let cluster: NodeCluster | undefined;
  let pool: Pool | undefined;
  let databaseUrl = '';
  let natsUrl = '';
  const forwarders: { close(): Promise<void> }[] = [];
  let gatewayUrl = '';
  let authorization = '';
  let taskId = '';

  const json = async <T>(...args: string[]): Promise<T> => JSON.parse(await (cluster as NodeCluster).kubectl(...args, '-o', 'json')) as T;
  type PodList = { items: { metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string }; status: { phase?: string; conditions?: { type: string; status: string }[] } }[] };
  const appPods = () => json<PodList>('get', 'pods', '-n', APP_NAMESPACE);
  const ready = (p: PodList['items'][number]) => !p.metadata.deletionTimestamp && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const component = (p: PodList['items'][number]) => p.metadata.labels?.['app.kubernetes.io/component'];

  beforeAll(async () => {
    const t0 = Date.now();
    await podman('tag', imageName('gateway'), ROLLOUT_IMAGE);
    cluster = await startNodeCluster({ log, images: [...TARGETS.map(imageName), PAUSE_IMAGE, ROLLOUT_IMAGE] });
    log(`cluster up in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    // The pods reach the run's PostgreSQL and NATS through forwarders on the node IP.
    databaseUrl = await testDatabase('k8s');
    const db = new URL(databaseUrl);
    const nats = new URL(sharedNatsUrl());
    const pgFwd = await forward(NODE_IP, { host: db.hostname, port: Number(db.port) });
    const natsFwd = await forward(NODE_IP, { host: nats.hostname, port: Number(nats.port) });
    forwarders.push(pgFwd, natsFwd);
    const podDb = new URL(databaseUrl);
    podDb.hostname = NODE_IP;
    podDb.port = String(pgFwd.port);
    natsUrl = `nats://${NODE_IP}:${natsFwd.port}`;
    pool = createPool(databaseUrl, createLogger('k8s-test', 'silent'));
    const t1 = Date.now();
    await installOperator(cluster);
    log(`operator chart installed and Ready in ${((Date.now() - t1) / 1000).toFixed(0)} s`);
    databaseUrl = podDb.toString();
    // start-up, plus up to 10 min queued behind another run's cluster on the same host (node.ts)
  }, 1_200_000);

  afterAll(async () => {
    await pool?.end();
    for (const f of forwarders) await f.close();
    // the name to remove is given twice: `podman untag IMAGE` alone would strip every name of the
    // image, the gateway's own tag included (images.test.ts then found it missing)
    await podman('untag', ROLLOUT_IMAGE, ROLLOUT_IMAGE).catch(() => undefined);
    const problems = await cluster?.stop();
    if (problems?.length) console.error(`[node-cluster] host not restored:\n${problems.join('\n')}`);
  }, 180_000);

  it('a TaskService with the built images serves GET /api/health through the gateway Service', async () => {
    const c = cluster as NodeCluster;
    const t0 = Date.now();
    await applyTaskService(c, { databaseUrl, natsUrl });
    await until(
      async () => {
        const pods = (await appPods()).items.filter(ready).map(component);
        return ['gateway', 'gateway', 'auth', 'tasks'].every((want, i, all) => pods.filter((p) => p === want).length >= all.filter((w) => w === want).length);
      },
      'gateway ×2, auth and tasks pods Ready',
      300_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await c.kubectl('get', 'pods', '-A', '-o', 'wide').catch(() => '')}\n${await c.kubectl('describe', 'pods', '-n', APP_NAMESPACE).catch(() => '')}`);
    });
    log(`TaskService Ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const ip = await c.kubectl('get', 'service', `${TS_NAME}-gateway`, '-n', APP_NAMESPACE, '-o', 'jsonpath={.spec.clusterIP}');
    gatewayUrl = `http://${ip}:3000`;
    // kube-proxy programs the Service shortly after the endpoints appear
    const res = await until(() => fetch(`${gatewayUrl}/api/health`).catch(() => undefined), `the gateway Service ${gatewayUrl}`, 60_000);
    expect(res.status).toBe(200);
  }, 420_000);

  it('a task is created through the gateway Service', async () => {
    ({ authorization } = await createUserWithApiKey(pool as Pool));
    const res = await fetch(`${gatewayUrl}/api/tasks`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'created through a Kubernetes Service' }),
    });
    expect(res.status).toBe(201);
    taskId = ((await res.json()) as { task: { id: string } }).task.id;
    const read = await fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } });
    expect(read.status).toBe(200);
  });

  /** Requests a task through the gateway Service in a loop while `change` rolls pods, until `settled`. */
  async function requestsDuring(change: () => Promise<unknown>, settled: () => Promise<boolean>, what: string) {
    const failures: string[] = [];
    let requests = 0;
    let rolling = true;
    const load = (async () => {
      while (rolling) {
        requests++;
        const r = await fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } }).then(
          (x) => (x.status === 200 ? '' : `HTTP ${x.status}`),
          (e: Error) => `${e.message}: ${String((e as { cause?: unknown }).cause)}`,
        );
        if (r) failures.push(r);
      }
    })();
    try {
      await change();
      await until(settled, what, 300_000);
    } finally {
      rolling = false;
      await load;
    }
    return { requests, failures };
  }
  const podNames = async (only?: string) => new Set((await appPods()).items.filter((p) => !only || component(p) === only).map((p) => p.metadata.name));

  // The gateway drains (SHUTDOWN_DELAY_SECONDS: it answers until kube-proxy has dropped it) and has a
  // readiness probe, so a rolling gateway loses no request.
  it('a spec change rolls the gateway pods with no failed request', async () => {
    const c = cluster as NodeCluster;
    const before = await podNames('gateway');
    const { requests, failures } = await requestsDuring(
      () => kubectlApply(c, taskService({ databaseUrl, natsUrl, overrides: { gateway: ROLLOUT_IMAGE } })),
      async () => {
        const gw = (await appPods()).items.filter((p) => component(p) === 'gateway');
        return gw.length === 2 && gw.every((p) => ready(p) && !before.has(p.metadata.name));
      },
      'two new gateway pods Ready and the old ones gone',
    );
    log(`gateway rollout: ${requests} requests, ${failures.length} failed`);
    expect(requests).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  }, 360_000);

  // A change of spec.config rolls every service at once. Auth and tasks are reached over the bus only;
  // their readiness probes (HEALTH_PORT) keep each old pod until its replacement has subscribed.
  it('a spec.config change rolls every service with no failed request', async () => {
    const c = cluster as NodeCluster;
    const before = await podNames();
    const { requests, failures } = await requestsDuring(
      () => kubectlApply(c, taskService({ databaseUrl, natsUrl, overrides: { gateway: ROLLOUT_IMAGE }, config: { LOG_LEVEL: 'warn' } })),
      async () => {
        const pods = (await appPods()).items;
        const count = (name: string) => pods.filter((p) => component(p) === name).length;
        return count('gateway') === 2 && count('auth') === 1 && count('tasks') === 1 && pods.every((p) => ready(p) && !before.has(p.metadata.name));
      },
      'every pod replaced and Ready',
    );
    log(`config rollout: ${requests} requests, ${failures.length} failed`);
    expect(requests).toBeGreaterThan(10);
    expect(failures).toEqual([]);
  }, 360_000);

  // The documented uninstall is one command: the chart's pre-delete hook deletes the TaskService while
  // the operator still runs, so nothing is left Terminating.
  it('helm uninstall removes the TaskService, its pods and the operator', async () => {
    const c = cluster as NodeCluster;
    await c.helm('uninstall', 'tso', '--namespace', OPERATOR_NAMESPACE, '--wait', '--timeout', '5m');
    expect((await c.kubectl('get', 'taskservices', '-A', '-o', 'name')).trim()).toBe('');
    await until(async () => (await appPods()).items.length === 0, 'no pods left in the TaskService namespace', 180_000);
    expect((await c.kubectl('get', 'deployments', '-n', APP_NAMESPACE, '-o', 'name')).trim()).toBe('');
    expect((await c.kubectl('get', 'deployments,jobs,serviceaccounts', '-n', OPERATOR_NAMESPACE, '-l', 'app.kubernetes.io/name=task-service-operator', '-o', 'name')).trim()).toBe('');
  }, 420_000);

  it('stopping the cluster leaves the host as it was (sysctls, iptables, links, netns, kubelet files)', async () => {
    for (const f of forwarders.splice(0)) await f.close();
    const problems = await (cluster as NodeCluster).stop();
    expect(problems).toEqual([]);
  }, 180_000);
});
