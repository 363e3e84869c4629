/**
 * The Kubernetes path for real, on a one-node cluster (node.ts) with the images build-images.sh built:
 * the operator chart installed, a TaskService whose pods reach the run's PostgreSQL and NATS, the API
 * answering through the gateway's Service, spec changes rolled out with no failed request, the firewall
 * DaemonSet firewalling the node (its own network namespace) without cutting it or the test off, `helm
 * uninstall` removing everything, and the host left exactly as it was.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createPool, type Pool } from '@tasksvc/runtime';
import { fileNats, testDatabase, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { APP_NAMESPACE, applyTaskService, forward, installOperator, kubectlApply, OPERATOR_NAMESPACE, taskService, TS_NAME } from './deploy.ts';
import { createTask, eventsOf, requestsDuring as requestLoop } from './request-loop.ts';
import { imageName, imagesMissing, PAUSE_IMAGE, podman, skipOrFail, TARGETS } from './images.ts';
import { HOST_IP, inNode, NODE_IP, NODE_NAME, nodeClusterMissing, OUTSIDE_IP, SERVICE_CIDR, startNodeCluster, type NodeCluster } from './node.ts';

const missing = [...(await nodeClusterMissing()), (await imagesMissing()) || []].flat();
const skip = skipOrFail(missing.length ? `one-node cluster test: ${missing.join('; ')}` : '');
const log = (l: string) => console.log(`[node-cluster] ${l}`);
// The rollout switches the gateway to the same image under a second name: only its pods change.
const ROLLOUT_IMAGE = imageName('gateway').replace(/:[^:]+$/, ':rollout');
// Ports of a listener in the node's namespace: one in the NodePort range (open to every source), one not.
const NODEPORT_RANGE_PORT = 31999;
const OTHER_PORT = 9123;
// What a run killed before its stop() leaves behind (planted before the start, see beforeAll).
const STALE_POD_LOG = '/var/log/pods/tasks_task-service-gateway-0-stale_00000000-0000-4000-8000-000000000000';
const STALE_CONTAINER_LOG = '/var/log/containers/task-service-gateway-0-stale_tasks_gateway-0.log';
const lstatExists = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

/**
 * How a TCP connect from the host address `from` to the node's `port` ends: open, refused (nothing listens),
 * or dropped (no answer at all within 3 s; an answer over this veth takes well under a millisecond).
 */
const reach = (port: number, from: string): Promise<string> =>
  new Promise((resolve) => {
    const s = connect({ host: NODE_IP, port, localAddress: from });
    s.setTimeout(3000, () => {
      s.destroy();
      resolve('dropped');
    });
    s.once('connect', () => {
      s.destroy();
      resolve('open');
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED' ? 'refused' : `error ${e.code}`));
  });

describe.skipIf(skip)('one-node cluster', () => {
  const fileNatsServer = fileNats();
  let cluster: NodeCluster | undefined;
  let pool: Pool | undefined;
  let databaseUrl = '';
  let natsUrl = '';
  const forwarders: { close(): Promise<void> }[] = [];
  let gatewayUrl = '';
  let authorization = '';
  let taskId = '';
  let listener: ChildProcess | undefined;
  /** The log directories the test made itself to plant an earlier run's leftovers in: removed at the end. */
  let plantedLogDirs: string[] = [];
  /** The test's listener lives in the node's namespace: it must be gone before stop() deletes that. */
  const stopListener = async () => {
    if (!listener || listener.exitCode !== null || listener.signalCode !== null) return;
    const exited = new Promise((r) => listener?.once('exit', r));
    listener.kill('SIGKILL');
    await exited;
  };

  const json = async <T>(...args: string[]): Promise<T> => JSON.parse(await (cluster as NodeCluster).kubectl(...args, '-o', 'json')) as T;
  type PodList = { items: { metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string }; status: { phase?: string; conditions?: { type: string; status: string }[] } }[] };
  const appPods = () => json<PodList>('get', 'pods', '-n', APP_NAMESPACE);
  const ready = (p: PodList['items'][number]) => !p.metadata.deletionTimestamp && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  const component = (p: PodList['items'][number]) => p.metadata.labels?.['app.kubernetes.io/component'];

  beforeAll(async () => {
    const t0 = Date.now();
    await podman('tag', imageName('gateway'), ROLLOUT_IMAGE);
    // What a run killed before its stop() leaves: a pod's log directory and its /var/log/containers
    // link, planted once this run holds the host (another file's cluster may hold it until then).
    const plantLeftovers = () => {
      plantedLogDirs = [dirname(STALE_POD_LOG), dirname(STALE_CONTAINER_LOG)].filter((d) => !existsSync(d));
      mkdirSync(STALE_POD_LOG, { recursive: true });
      writeFileSync(join(STALE_POD_LOG, '0.log'), 'from a run that died\n');
      mkdirSync(dirname(STALE_CONTAINER_LOG), { recursive: true });
      symlinkSync(join(STALE_POD_LOG, '0.log'), STALE_CONTAINER_LOG);
    };
    cluster = await startNodeCluster({ log, images: [...TARGETS.map(imageName), PAUSE_IMAGE, ROLLOUT_IMAGE], whenLocked: plantLeftovers });
    log(`cluster up in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    // The pods reach the run's PostgreSQL and NATS through forwarders on the host's end of the node's veth.
    databaseUrl = await testDatabase('k8s');
    const db = new URL(databaseUrl);
    const nats = new URL(fileNatsServer.url());
    const pgFwd = await forward(HOST_IP, { host: db.hostname, port: Number(db.port) });
    const natsFwd = await forward(HOST_IP, { host: nats.hostname, port: Number(nats.port) });
    forwarders.push(pgFwd, natsFwd);
    const podDb = new URL(databaseUrl);
    podDb.hostname = HOST_IP;
    podDb.port = String(pgFwd.port);
    natsUrl = `nats://${HOST_IP}:${natsFwd.port}`;
    pool = createPool(databaseUrl, createLogger('k8s-test', 'silent'));
    const t1 = Date.now();
    await installOperator(cluster);
    log(`operator chart installed and Ready in ${((Date.now() - t1) / 1000).toFixed(0)} s`);
    databaseUrl = podDb.toString();
    // start-up, plus up to 10 min queued behind another run's cluster on the same host (node.ts)
  }, 1_200_000);

  afterAll(async () => {
    await stopListener();
    await pool?.end();
    for (const f of forwarders) await f.close();
    // the name to remove is given twice: `podman untag IMAGE` alone would strip every name of the
    // image, the gateway's own tag included (images.test.ts then found it missing)
    await podman('untag', ROLLOUT_IMAGE, ROLLOUT_IMAGE).catch(() => undefined);
    const problems = await cluster?.stop();
    if (problems?.length) console.error(`[node-cluster] host not restored:\n${problems.join('\n')}`);
    for (const d of plantedLogDirs) rmSync(d, { recursive: true, force: true });
  }, 180_000);

  it('a start clears the pod logs an earlier run left, before its snapshot (the kubelet would remove them later)', () => {
    expect(existsSync(STALE_POD_LOG)).toBe(false);
    expect(lstatExists(STALE_CONTAINER_LOG)).toBe(false);
  });

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
    taskId = await createTask(gatewayUrl, authorization, 'created through a Kubernetes Service');
    const read = await fetch(`${gatewayUrl}/api/tasks/${taskId}`, { headers: { authorization } });
    expect(read.status).toBe(200);
  });

  /** GET /api/tasks/:id through the gateway Service in a loop while `change` happens, until `settled`. */
  const requestsDuring = (change: () => Promise<unknown>, settled: () => Promise<boolean>, what: string, limitMs?: number) =>
    requestLoop(`${gatewayUrl}/api/tasks/${taskId}`, authorization, change, settled, what, { limitMs, explain: () => eventsOf(cluster as NodeCluster, APP_NAMESPACE) });
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

  // The spec after both rollouts; the firewall tests add and remove spec.firewall on it (no pod rolls).
  const settledSpec = (firewall?: Record<string, unknown>) =>
    taskService({ databaseUrl, natsUrl, overrides: { gateway: ROLLOUT_IMAGE }, config: { LOG_LEVEL: 'warn' }, ...(firewall ? { firewall } : {}) });

  // A change of spec.config rolls every service at once. Auth and tasks are reached over the bus only;
  // their readiness probes (HEALTH_PORT) keep each old pod until its replacement has subscribed.
  it('a spec.config change rolls every service with no failed request', async () => {
    const c = cluster as NodeCluster;
    const before = await podNames();
    const { requests, failures } = await requestsDuring(
      () => kubectlApply(c, settledSpec()),
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

  const firewallPods = async () => (await appPods()).items.filter((p) => component(p) === 'firewall');
  const command = (cmd: string, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (out += d.toString()));
      p.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')}: exit ${code}: ${out}`))));
    });
  const inNodeNetns = (cmd: string, ...args: string[]) => command(...inNode(cmd, args));
  const nodeReady = async () =>
    (await (cluster as NodeCluster).kubectl('get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}')).split(' ');
  let firewallDir = '';

  // The firewall DaemonSet (privileged, hostNetwork) sets the node's input policy to drop. hostNetwork
  // pods share containerd's network namespace, i.e. the node's, so it firewalls the node, not the host.
  it('the firewall DaemonSet firewalls the node without cutting it or the test off', async () => {
    const c = cluster as NodeCluster;
    // A listener on the node, reached from a host address that is no cluster member.
    const [cmd, args] = inNode(process.execPath, [
      '-e',
      `const net = require('node:net'); let n = 0; for (const p of [${NODEPORT_RANGE_PORT}, ${OTHER_PORT}]) net.createServer((s) => s.on('error', () => undefined).end('ok')).listen(p, '${NODE_IP}', () => ++n === 2 && console.log('listening'));`,
    ]);
    listener = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve, reject) => {
      listener?.stdout?.once('data', resolve);
      listener?.once('exit', (code) => reject(new Error(`the listener in the node namespace exited with ${code}`)));
    });
    expect([await reach(NODEPORT_RANGE_PORT, OUTSIDE_IP), await reach(OTHER_PORT, OUTSIDE_IP)]).toEqual(['open', 'open']);
    const [, readySince] = await nodeReady();

    firewallDir = join(c.dir, 'firewall');
    const t0 = Date.now();
    // pod networks come from node.spec.podCIDR; there is no kubeadm-config to name the Service range
    await kubectlApply(c, settledSpec({ enabled: true, serviceCIDR: SERVICE_CIDR, config: { data_dir: join(firewallDir, 'data'), log_dir: join(firewallDir, 'log') } }));
    const pod = await until(async () => (await firewallPods()).find(ready), 'the firewall pod Ready', 180_000).catch(async (e: Error) => {
      throw new Error(`${e.message}\n${await c.kubectl('describe', 'pods', '-n', APP_NAMESPACE, '-l', 'app.kubernetes.io/component=firewall').catch(() => '')}`);
    });
    log(`firewall pod Ready ${((Date.now() - t0) / 1000).toFixed(1)} s after the spec change`);
    // FIREWALL_SELF_CONFIRM: the daemon keeps its first apply only if the API server and the kubelet still answer
    type Audit = { time: string; action: string; actor?: string; detail?: string };
    const audit = (): Audit[] => {
      try {
        return readFileSync(join(firewallDir, 'log', 'audit.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Audit);
      } catch {
        return [];
      }
    };
    const accepted = await until(
      () => {
        const entries = audit();
        if (entries.some((e) => e.action === 'apply_rolledback' || e.action === 'apply_failed')) throw new Error(`the firewall did not keep its rules:\n${JSON.stringify(entries, null, 1)}`);
        return entries.find((e) => e.action === 'apply_accepted');
      },
      'the firewall to confirm its first apply (audit apply_accepted)',
      150_000,
    );
    expect(accepted.actor).toBe('self-confirm');
    const acceptedAt = Date.parse(accepted.time);
    log(`first apply confirmed by the daemon itself ${((acceptedAt - t0) / 1000).toFixed(1)} s after the spec change`);
    // The operator's Firewall condition counts the daemons whose readiness probe (services/firewall/src/ready.ts)
    // says the kernel enforces the confirmed rules of the current ConfigMap: True once this node's is Ready.
    const fwCondition = await until(
      async () => {
        const conds = JSON.parse(await c.kubectl('get', 'taskservice', TS_NAME, '-n', APP_NAMESPACE, '-o', 'jsonpath={.status.conditions}')) as { type: string; status: string; reason: string; message: string }[];
        const fw = conds.find((x) => x.type === 'Firewall');
        return fw?.status === 'True' && fw;
      },
      'the TaskService condition Firewall=True',
      60_000,
    );
    expect(fwCondition.reason).toBe('Enforcing');
    log(`Firewall=True ${fwCondition.reason}: ${fwCondition.message}`);

    // The table is in the node's namespace, with input policy drop; the host has none.
    const input = await inNodeNetns('nft', 'list', 'chain', 'inet', 'task_firewall', 'input');
    expect(input).toMatch(/type filter hook input priority filter; policy drop;/);
    expect(await inNodeNetns('nft', 'list', 'tables')).toMatch(/table inet task_firewall/);
    await expect(command('nft', ['list', 'table', 'inet', 'task_firewall'])).rejects.toThrow(/No such file or directory/);
    // really dropped: a port outside the allowances from outside the cluster; the NodePort range stays open
    expect(await reach(OTHER_PORT, OUTSIDE_IP)).toBe('dropped');
    expect(await reach(NODEPORT_RANGE_PORT, OUTSIDE_IP)).toBe('open');
    // the kubelet's port is open to the API server's address (whitelisted on every port), not to outsiders
    expect(await reach(10250, HOST_IP)).toBe('open');
    expect(await reach(10250, OUTSIDE_IP)).toBe('dropped');
    expect(await reach(OTHER_PORT, HOST_IP)).toBe('open');

    // The API server still reaches the kubelet (logs and exec go through it) …
    expect(await c.kubectl('logs', '-n', APP_NAMESPACE, pod.metadata.name, '-c', 'core')).toMatch(/firewall core ready/);
    const status = await c.kubectl('exec', '-n', APP_NAMESPACE, pod.metadata.name, '-c', 'core', '--', 'node', 'services/firewall/src/cli.ts', 'status', '--config', '/etc/task-firewall/config.json');
    expect(status).toMatch(/firewall: active \(table inet task_firewall\)/);
    expect(status).toMatch(/state: accepted/);
    // … the gateway Service answers the test on the host, and a task is created (gateway → auth → tasks → PostgreSQL)
    expect((await fetch(`${gatewayUrl}/api/health`)).status).toBe(200);
    const res = await fetch(`${gatewayUrl}/api/tasks`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'created behind the node firewall' }),
    });
    expect(res.status).toBe(201);

    // … and the kubelet's heartbeats (its node Lease, renewed every 10 s) keep arriving: 30 s after the
    // confirmation the node is still Ready, with no transition since before the firewall.
    const renewals = new Set<string>();
    await until(
      async () => {
        const renew = await c.kubectl('get', 'lease', '-n', 'kube-node-lease', NODE_NAME, '-o', 'jsonpath={.spec.renewTime}');
        if (Date.parse(renew) > acceptedAt) renewals.add(renew);
        return Date.parse(renew) >= acceptedAt + 30_000 || (await new Promise((r) => setTimeout(r, 1000)), false);
      },
      'node Lease renewals for 30 s after the firewall took effect',
      90_000,
    );
    expect(renewals.size).toBeGreaterThanOrEqual(3);
    expect(await nodeReady()).toEqual(['True', readySince]);
    log(`firewall on: ${renewals.size} node Lease renewals in 30 s, node Ready since ${readySince}`);
  }, 420_000);

  // A stopped daemon never opens the node (docs/firewall.md): the last confirmed rules stay in the kernel.
  it('removing spec.firewall removes the DaemonSet; its last confirmed rules stay on the node, which keeps working', async () => {
    const c = cluster as NodeCluster;
    await kubectlApply(c, settledSpec());
    await until(async () => (await c.kubectl('get', 'daemonsets', '-n', APP_NAMESPACE, '-o', 'name')).trim() === '' && (await firewallPods()).length === 0, 'the firewall DaemonSet and pod gone', 180_000);
    expect(readFileSync(join(firewallDir, 'log', 'audit.log'), 'utf8')).not.toMatch(/apply_rolledback|firewall_off/);
    expect(await inNodeNetns('nft', 'list', 'chain', 'inet', 'task_firewall', 'input')).toMatch(/policy drop;/);
    expect(await reach(OTHER_PORT, OUTSIDE_IP)).toBe('dropped');
    expect((await fetch(`${gatewayUrl}/api/health`)).status).toBe(200);
    expect((await nodeReady())[0]).toBe('True');
  }, 240_000);

  // The documented uninstall (docs/kubernetes.md): a TaskService applied by hand, as this one, is deleted
  // by hand while the operator still runs (its finalizer), then `helm uninstall` removes the operator;
  // the chart's pre-delete hook deletes only the TaskServices the release created (none here).
  it('deleting the TaskService removes its pods; helm uninstall then removes the operator', async () => {
    const c = cluster as NodeCluster;
    await c.kubectl('delete', 'taskservices', '--all', '-A', '--wait', '--timeout=180s');
    await c.helm('uninstall', 'tso', '--namespace', OPERATOR_NAMESPACE, '--wait', '--timeout', '5m');
    expect((await c.kubectl('get', 'taskservices', '-A', '-o', 'name')).trim()).toBe('');
    await until(async () => (await appPods()).items.length === 0, 'no pods left in the TaskService namespace', 180_000);
    expect((await c.kubectl('get', 'deployments', '-n', APP_NAMESPACE, '-o', 'name')).trim()).toBe('');
    expect((await c.kubectl('get', 'deployments,jobs,serviceaccounts', '-n', OPERATOR_NAMESPACE, '-l', 'app.kubernetes.io/name=task-service-operator', '-o', 'name')).trim()).toBe('');
  }, 420_000);

  it('stopping the cluster leaves the host as it was (sysctls, iptables, nftables, links, routes, netns, kubelet files)', async () => {
    for (const f of forwarders.splice(0)) await f.close();
    await stopListener();
    const problems = await (cluster as NodeCluster).stop();
    expect(problems).toEqual([]);
  }, 180_000);
});
