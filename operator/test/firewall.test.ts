/* eslint-disable @typescript-eslint/no-explicit-any -- tests read deep into untyped Kubernetes objects */
/** L0: what the firewall DaemonSet keeps open on a node, where it runs, and when it refuses to run. */
import { describe, expect, it } from 'vitest';
import { plan, type CronJobApiVersion } from '../src/desired.ts';
import { firewallWinner, nodeAllowances } from '../src/firewall.ts';
import { firewallCondition } from '../src/status.ts';
import { normalizeSpec } from '../src/types.ts';
import { cluster, full } from './fixtures.ts';

const cronJobApiVersion: CronJobApiVersion = 'batch/v1';
const render = (ts = full(), facts: any = { cluster, webPassword: true }) => plan(ts, { cronJobApiVersion, firewall: facts });
const daemonSet = (p: ReturnType<typeof plan>) => p.objects.find((o) => o.kind === 'DaemonSet') as any;

describe('firewall on Kubernetes (L0)', () => {
  it('whitelists pod, service and node networks and the API server; opens SSH and the NodePort range', () => {
    const a = nodeAllowances(normalizeSpec(full().spec), cluster);
    if ('problem' in a) throw new Error(a.problem);
    expect(a.networks).toEqual(
      expect.arrayContaining(['10.244.0.0/24', '10.244.1.0/24', '10.244.0.0/16', '10.96.0.0/12', '192.0.2.10/32', '192.0.2.11/32', '2001:db8::11/128']),
    );
    expect(a.tcp.map((r) => r.port)).toEqual(['22', '30000-32767']); // the API server port only with controlPlane
    expect(a.udp.map((r) => r.port)).toEqual(['30000-32767']);
    expect(a.selfConfirm).toBe('tcp:192.0.2.10:6443,tcp:$(NODE_IP):10250');
  });

  it('on control-plane nodes only when asked, and then the API server port is open', () => {
    const ds = daemonSet(render());
    const terms = ds.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    expect(terms[0].matchExpressions).toEqual([
      { key: 'node-role.kubernetes.io/control-plane', operator: 'DoesNotExist' },
      { key: 'node-role.kubernetes.io/master', operator: 'DoesNotExist' },
    ]);
    expect(ds.spec.template.spec.tolerations).toBeUndefined();

    const ts = full();
    ts.spec.firewall.controlPlane = true;
    const cp = daemonSet(render(ts));
    expect(cp.spec.template.spec.affinity).toBeUndefined();
    expect(cp.spec.template.spec.tolerations).toEqual([{ operator: 'Exists' }]);
    const seed = cp.spec.template.spec.initContainers[0];
    expect(JSON.parse(seed.env.find((e: any) => e.name === 'RULES').value).tcp.map((r: any) => r.port)).toEqual(['22', '30000-32767', '6443']);
  });

  it('writes the networks into the daemon config, seeds the first rules, and sets FIREWALL_SELF_CONFIRM', () => {
    const p = render();
    const cm = p.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'prod-firewall') as any;
    const config = JSON.parse(cm.data['config.json']);
    expect(config.container.custom_networks).toContain('10.96.0.0/12');
    expect(config.container.custom_networks).toContain('192.0.2.11/32');
    const spec = daemonSet(p).spec.template.spec;
    const core = spec.containers.find((c: any) => c.name === 'core');
    const env = Object.fromEntries(core.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));
    expect(env.FIREWALL_SELF_CONFIRM).toBe('tcp:192.0.2.10:6443,tcp:$(NODE_IP):10250');
    // NODE_IP comes before its use: the kubelet expands $(NODE_IP) only from earlier variables.
    expect(core.env.findIndex((e: any) => e.name === 'NODE_IP')).toBeLessThan(core.env.findIndex((e: any) => e.name === 'FIREWALL_SELF_CONFIRM'));
    expect(env.NODE_IP).toEqual({ fieldRef: { fieldPath: 'status.hostIP' } });
    expect(spec.initContainers[0].env.find((e: any) => e.name === 'RULES_FILE').value).toBe('/var/lib/task-firewall/rules.json');
    expect(p.conditions.find((c) => c.type === 'Firewall')).toMatchObject({ status: 'True', reason: 'Deployed' });
  });

  it('does not run at all when the pod network is unknown, and says why', () => {
    const p = render(full(), { cluster: { ...cluster, nodes: cluster.nodes.map((n) => ({ ...n, podCIDRs: [] })), kubeadm: undefined }, webPassword: true });
    expect(daemonSet(p)).toBeUndefined();
    expect(p.conditions).toEqual([expect.objectContaining({ type: 'Firewall', status: 'False', reason: 'NodeNetworksUnknown' })]);
    const ts = full();
    ts.spec.firewall.podCIDRs = ['10.32.0.0/12'];
    expect(daemonSet(render(ts, { cluster: { ...cluster, nodes: [], kubeadm: undefined }, webPassword: true }))).toBeDefined();
  });

  it('one firewall per node: the oldest TaskService runs it, another gets a condition naming it', () => {
    expect(
      firewallWinner([
        { namespace: 'b', name: 'x', creationTimestamp: '2026-01-02T00:00:00Z' },
        { namespace: 'a', name: 'y', creationTimestamp: '2026-01-01T00:00:00Z' },
      ]),
    ).toEqual(expect.objectContaining({ namespace: 'a', name: 'y' }));
    const p = render(full(), { cluster, webPassword: true, ownedBy: 'a/y' });
    expect(p.objects.filter((o) => o.metadata.name === 'prod-firewall')).toEqual([]);
    expect(p.conditions[0]).toMatchObject({ type: 'Firewall', status: 'False', reason: 'AnotherFirewall' });
    expect(p.conditions[0]?.message).toContain('a/y');
  });

  it('without a web password the web container is left out (no crash loop) and a condition says so', () => {
    const p = render(full(), { cluster, webPassword: false });
    expect(daemonSet(p).spec.template.spec.containers.map((c: any) => c.name)).toEqual(['core']);
    expect(p.conditions.find((c) => c.type === 'FirewallWeb')).toMatchObject({ status: 'False', reason: 'NoPassword' });
  });

  it('the core container is ready only while its daemon says the ConfigMap\'s options are in force (ready.ts)', () => {
    const core = daemonSet(render()).spec.template.spec.containers.find((c: any) => c.name === 'core');
    expect(core.readinessProbe).toEqual({
      exec: { command: ['node', 'services/firewall/src/ready.ts', '--socket', '/run/task-firewall/core.sock'] },
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 1,
    });
  });
});

describe('Firewall condition from what the daemons report (L0, issue 59 #13)', () => {
  const deployed = 'on every node except control-plane nodes; 7 cluster networks whitelisted';
  const ds = (status: Record<string, number>) => ({ metadata: { generation: 3 }, status: { observedGeneration: 3, ...status } });
  const rolledBack =
    'RolledBack: the options in /etc/task-firewall/config.json are not in force: they were rolled back (daemon restarted during the confirmation window) and the file could not be restored (read-only, e.g. a ConfigMap); the kernel enforces the last confirmed options. A restart of the daemon (or SIGHUP) tries them again with a new confirmation window';

  it('True only when every node it should run on has a ready daemon of the current template', () => {
    const c = firewallCondition(ds({ desiredNumberScheduled: 2, numberReady: 2, updatedNumberScheduled: 2 }), [], deployed);
    expect(c).toEqual({ type: 'Firewall', status: 'True', reason: 'Enforcing', message: `${deployed}; all 2 daemons enforce the confirmed rules of the current configuration` });
  });

  it('a daemon that rolled back the ConfigMap\'s options turns it False with its own reason, naming the node and its words', () => {
    const c = firewallCondition(
      ds({ desiredNumberScheduled: 2, numberReady: 1, updatedNumberScheduled: 2 }),
      [
        { node: 'worker-1', ready: true },
        { node: 'worker-2', ready: false, probe: rolledBack },
      ],
      deployed,
    );
    expect(c).toMatchObject({ status: 'False', reason: 'RolledBack' });
    expect(c.message).toBe(`${deployed}; 1 of 2 nodes do not enforce the current configuration: worker-2: ${rolledBack}`);
  });

  it('daemons that disagree (or have not reported yet) give NotEnforcing, each node with its own report', () => {
    const c = firewallCondition(
      ds({ desiredNumberScheduled: 3, numberReady: 0, updatedNumberScheduled: 2 }),
      [
        { node: 'b', ready: false, probe: "KernelDiffers: the kernel's table inet task_firewall differs from what the daemon applied" },
        { node: 'a', ready: false, probe: rolledBack },
        { node: undefined, ready: false },
      ],
      deployed,
    );
    expect(c).toMatchObject({ status: 'False', reason: 'NotEnforcing' });
    expect(c.message).toContain('3 of 3 nodes do not enforce the current configuration (1 still run the previous template): a: RolledBack: ');
    expect(c.message).toContain("; b: KernelDiffers: the kernel's table");
    expect(c.message).toContain('; unscheduled: not ready (no readiness report yet)');
  });

  it('a template the DaemonSet controller has not taken, or no node to run on, is not enforcing either', () => {
    expect(firewallCondition({ metadata: { generation: 4 }, status: { observedGeneration: 3, desiredNumberScheduled: 1, numberReady: 1, updatedNumberScheduled: 1 } }, [], deployed)).toMatchObject({
      status: 'False',
      reason: 'RollingOut',
    });
    expect(firewallCondition(ds({ desiredNumberScheduled: 0 }), [], deployed)).toMatchObject({ status: 'False', reason: 'NoNodes' });
    expect(firewallCondition(undefined, [], deployed)).toMatchObject({ status: 'False', reason: 'DaemonSetMissing' });
  });
});
