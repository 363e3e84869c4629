/**
 * A one-node Kubernetes 1.20.2 on this machine, with real pods: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, kubelet and kube-proxy (built by ensure-apiserver.sh),
 * containerd + runc + the CNI bridge plugin from Debian, and the images build-images.sh built
 * (imported into containerd; pods use imagePullPolicy: Never). Recipe and reasons:
 * shared/notes/containers-and-kubelet.md.
 *
 * The node is a network namespace of its own (NODE_NETNS), so what a pod does to "its node" — the
 * firewall DaemonSet's nftables input policy drop, kube-proxy's iptables chains, ip_forward — stays
 * there and never reaches the host:
 *
 *   host (control plane: etcd, kube-apiserver, controller-manager, scheduler; the test process)
 *     tsk8s-host 10.89.81.1/29 (HOST_IP: API server bind/advertise address, forwarders for pods)
 *                10.89.81.3/29 (OUTSIDE_IP: a host address that is no cluster member)
 *     routes 10.89.80.0/24 (pods) and 10.96.0.0/16 (Services) via 10.89.81.2
 *       │ veth
 *   netns tasksvc-node (containerd, kubelet, kube-proxy and every pod; hostNetwork pods share it)
 *     tsk8s-node 10.89.81.2/29 (NODE_IP: the node's InternalIP, kubelet 10250), default via 10.89.81.1
 *     bridge tsk8s0 10.89.80.1/24 (CNI, pod CIDR), ip_forward=1
 *
 * Node processes are started with `nsenter --net` (not `ip netns exec`, which would also unshare the
 * mount namespace and remount /sys, hiding the cgroup mounts from the kubelet and runc, and keeping
 * containerd's mounts from the host).
 *
 * Everything it writes lives in one directory, except what the kubelet, containerd and CNI insist on
 * (/var/log/pods, /var/log/containers, /var/lib/cni, /run/netns/cni-*, /run/containerd, the kubepods
 * cgroups) and the network namespace, veth and host routes. stop() removes each of those (the routes and
 * the namespace's own iptables, nftables and sysctls vanish with it), compares the host with a snapshot
 * taken before (sysctls, iptables, nftables, links, routes, namespaces, those directories) and reports
 * what differs; processes are stopped by pid. What a run that died without stop() left, the next run
 * removes before its snapshot (clearEarlierRuns).
 *
 * The operator's defaults run on it (issue 59): kube-controller-manager with the statefulset,
 * persistentvolume-binder, pvc-protection, pv-protection, attachdetach and disruption controllers; a
 * cluster DNS for `*.svc.cluster.local` (Debian has no CoreDNS: Debian's dnsmasq as a stand-in on the pod
 * bridge's gateway POD_GATEWAY:53 in the node's namespace, its records kept in step with Services and
 * Endpoints by dns.ts; the kubelet's --cluster-dns); and a default StorageClass `local` over local
 * PersistentVolumes in the run's directory. The start waits until a pod's question to that DNS (asked
 * from the node's namespace, where pods reach the bridge) is answered.
 *
 * Run as a script (`npm run cluster:up`) it starts the cluster, prints a KUBECONFIG and stays up until Ctrl-C.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@tasksvc/runtime';
import { apiServerBinaries, helmBinaries, K8S_VERSION } from './bins.ts';
import { apiGet, etcdSetup } from './cluster.ts';
import { CLUSTER_DOMAIN, dnsmasqArgs, syncClusterDns } from './dns.ts';
import { imageName, NATS_IMAGE, PAUSE_IMAGE, podman, POSTGRES_IMAGE, TARGETS } from './images.ts';

const exec = promisify(execFile);
const k8sCache = process.env.TASKSVC_K8S_CACHE ?? `/var/cache/task-service/k8s-${K8S_VERSION}`;
export const NODE_NAME = 'tasksvc-node';
/** The node's network namespace (`ip netns` name): containerd, kubelet, kube-proxy and every pod. */
export const NODE_NETNS = 'tasksvc-node';
const VETH_HOST = 'tsk8s-host';
const VETH_NODE = 'tsk8s-node';
/** The host's end of the veth: the API server binds and advertises it; pods reach host forwarders here. */
export const HOST_IP = '10.89.81.1';
/** The node's end of the veth: its InternalIP (kubelet, NodePorts). */
export const NODE_IP = '10.89.81.2';
/** A second host address on the veth that is no cluster member: a client from outside the cluster. */
export const OUTSIDE_IP = '10.89.81.3';
const LINK_PREFIX = 29;
const BRIDGE = 'tsk8s0';
export const POD_CIDR = '10.89.80.0/24';
/** The pod bridge's address in the node: pods' gateway, and the cluster DNS (dnsmasq, port 53) they ask. */
export const POD_GATEWAY = '10.89.80.1';
export const CLUSTER_DNS = POD_GATEWAY;
/** The default StorageClass: local volumes in the run's directory (no provisioner: PVs made at start). */
export const STORAGE_CLASS = 'local';
/** Local PersistentVolumes made at start: NATS (1 or 3 servers) and the database, with room for a recreation. */
const LOCAL_VOLUMES = 6;
/** What each local PV offers: more than any claim of the operator's defaults (NATS 2Gi, database 10Gi). */
const LOCAL_VOLUME_SIZE = '20Gi';
export const SERVICE_CIDR = '10.96.0.0/16';
export const KUBELET_PORT = 10250;
/** `cmd args` as a process in the node's network namespace (only the network: mounts and /sys stay the host's). */
export const inNode = (cmd: string, args: string[]): [string, string[]] => ['nsenter', [`--net=/run/netns/${NODE_NETNS}`, cmd, ...args]];
/**
 * Sysctls the stack sets. The network ones (CNI bridge, kube-proxy) are per network namespace and now land
 * in the node's; the kernel-wide ones the patched kubelet only warns about. Checked, and restored, on stop.
 */
const SYSCTLS = [
  'net.ipv4.ip_forward',
  'net.ipv4.conf.all.route_localnet',
  'net.bridge.bridge-nf-call-iptables',
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
];
const IPTABLES_TABLES = ['filter', 'nat', 'mangle'];
/** Asks the DNS server argv[1] for the A record of argv[2] and prints the first address. */
const DNS_PROBE =
  "const { Resolver } = require('node:dns/promises'); const r = new Resolver({ timeout: 1000, tries: 1 }); r.setServers([process.argv[1]]); r.resolve4(process.argv[2]).then((a) => console.log(a[0]), (e) => { console.error(e.code); process.exit(1); });";
/** Directories outside ours that the kubelet, containerd and CNI write into. */
const FOREIGN_DIRS = ['/var/log/pods', '/var/log/containers', '/var/lib/cni', '/run/containerd'];

export interface NodeCluster {
  server: string;
  token: string;
  kubeconfigPath: string;
  dir: string;
  /** the node's InternalIP (NODE_IP) */
  nodeIp: string;
  /** the host's end of the node's veth (HOST_IP): the API server; pods reach host listeners here */
  hostIp: string;
  kubectl(...args: string[]): Promise<string>;
  helm(...args: string[]): Promise<string>;
  /** Stops everything and restores the host; resolves with what differs from before (empty when clean). */
  stop(): Promise<string[]>;
}

const sh = async (cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<string> => {
  try {
    const p = exec(cmd, args, { env: opts.env ?? process.env, maxBuffer: 64 << 20 });
    if (opts.input !== undefined) {
      p.child.stdin?.end(opts.input);
    }
    return (await p).stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${(e.stderr || e.stdout || e.message).trim()}`, { cause: err });
  }
};
const quiet = (p: Promise<unknown>) => p.then(() => undefined, () => undefined);


const tail = (file: string, n = 30) => {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
};

/** Host state the cluster may touch, to compare before and after. */
async function hostSnapshot(): Promise<Record<string, string>> {
  const snap: Record<string, string> = {};
  for (const s of SYSCTLS) snap[`sysctl ${s}`] = await sh('sysctl', ['-n', s]).catch(() => '(absent)');
  for (const t of IPTABLES_TABLES) {
    const rules = await sh('iptables-save', ['-t', t]).catch(() => '');
    snap[`iptables ${t}`] = rules
      .split('\n')
      .filter((l) => !l.startsWith('#'))
      .map((l) => l.replace(/\[\d+:\d+\]/g, ''))
      .join('\n');
  }
  // The firewall daemon's table must never appear on the host (it belongs in the node's namespace).
  snap['nftables inet task_firewall'] = await sh('nft', ['list', 'table', 'inet', 'task_firewall']).then(() => 'present', () => '(absent)');
  // Only names this cluster could leave behind: other work on the machine adds and removes its own.
  snap.links = (await sh('ip', ['-o', 'link', 'show']))
    .split('\n')
    .map((l) => l.split(':')[1]?.trim().split('@')[0] ?? '')
    .filter((n) => n.startsWith('tsk8s') || /^veth[0-9a-f]{8}$/.test(n))
    .sort()
    .join(' ');
  snap.routes = (await sh('ip', ['-4', 'route', 'show']))
    .split('\n')
    .filter((l) => /\b10\.(89\.8[01]|96)\./.test(l))
    .join('\n');
  snap.netns = existsSync('/run/netns') ? readdirSync('/run/netns').filter((n) => n.startsWith('cni-') || n === NODE_NETNS).sort().join(' ') : '';
  for (const d of FOREIGN_DIRS) snap[`dir ${d}`] = existsSync(d) ? readdirSync(d).sort().join(' ') : '(absent)';
  return snap;
}

/** What it takes to run; empty when everything is there. */
export async function nodeClusterMissing(): Promise<string[]> {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) return ['root (kubelet, containerd, network namespace, iptables)'];
  const bins = apiServerBinaries();
  missing.push(...bins.missing);
  for (const b of ['kubelet', 'kube-scheduler', 'kube-proxy']) {
    if (!existsSync(join(k8sCache, 'bin', b))) missing.push(`${b} (run tools/k8s/ensure-apiserver.sh)`);
  }
  missing.push(...helmBinaries().missing);
  for (const [tool, pkg] of [
    ['containerd', 'containerd'],
    ['ctr', 'containerd'],
    ['runc', 'runc'],
    ['iptables-save', 'iptables'],
    ['nft', 'nftables'],
    ['nsenter', 'util-linux'],
    ['dnsmasq', 'dnsmasq-base'],
  ]) {
    if (!(await sh('sh', ['-c', `command -v ${tool}`]).catch(() => ''))) missing.push(`${tool} (apt-get install ${pkg})`);
  }
  if (!existsSync('/usr/lib/cni/bridge')) missing.push('CNI plugins (apt-get install containernetworking-plugins)');
  return missing;
}

const runNetnsIsMount = () => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === '/run/netns');
/** Whether /run/netns was a mount point when this process first looked (before any cluster of its own). */
const runNetnsWasMount = runNetnsIsMount();

/** The fixed namespace, veth and addresses allow one cluster per host; this file names its owner. */
const HOST_LOCK = '/run/tasksvc-node.pid';
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Takes the host's one-cluster lock, waiting (up to `limitMs`) while another live run holds it, so two
 * runs on one machine queue instead of colliding. A lock left by a dead process is taken over, and the
 * network namespace and links it left are removed.
 */
async function takeHostLock(log: (line: string) => void, limitMs = 10 * 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  let nextLog = 0;
  for (;;) {
    try {
      writeFileSync(HOST_LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch {
      let owner: number;
      try {
        owner = Number(readFileSync(HOST_LOCK, 'utf8').trim() || 0);
      } catch {
        continue; // released between our attempt and the read: try again
      }
      if (!owner || !alive(owner)) {
        log(`taking over the one-cluster lock from a run that is gone (pid ${owner})`);
        rmSync(HOST_LOCK, { force: true });
        continue;
      }
      if (Date.now() > end) throw new Error(`another one-node cluster (pid ${owner}) still holds ${HOST_LOCK} after ${limitMs / 60_000} min`);
      if (Date.now() >= nextLog) {
        log(`waiting for the one-node cluster of pid ${owner} to finish (${HOST_LOCK})`);
        nextLog = Date.now() + 60_000;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  await removeNodeNetwork();
}

/** Every run's own directory starts with this; a process or mount naming it belongs to a run. */
const RUN_DIR_PREFIX = '/var/tmp/tasksvc-node-';

/**
 * What a run that died without its stop() (killed with its test runner, a session cut off) left behind,
 * removed before this run takes its snapshot: its processes and mounts, its directory, its pods' network
 * namespaces and cgroups, and the pod log files in /var/log/pods and /var/log/containers. Those log files
 * would go anyway: a kubelet garbage-collects the log directories of every pod it does not run, so a
 * snapshot taken with them in it would later report them as changed. Called with the host lock held, so
 * no live run of ours owns any of it; a kubelet of someone else's on this host is refused, not touched.
 */
async function clearEarlierRuns(log: (line: string) => void): Promise<void> {
  const foreignKubelet = readdirSync('/proc').find((e) => {
    if (!/^\d+$/.test(e)) return false;
    try {
      return readFileSync(`/proc/${e}/comm`, 'utf8').trim() === 'kubelet' && !readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(RUN_DIR_PREFIX);
    } catch {
      return false;
    }
  });
  if (foreignKubelet) throw new Error(`a kubelet that is not this cluster's runs on this host (pid ${foreignKubelet}); two kubelets would share /var/log/pods and the kubepods cgroups`);
  const removed: string[] = [];
  const orphans = pidsMentioning(RUN_DIR_PREFIX);
  killAll(orphans);
  if (orphans.length) removed.push(`${orphans.length} processes`);
  const end = Date.now() + 10_000;
  while (orphans.some(alive) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  const runDirs = readdirSync('/var/tmp').map((e) => `/var/tmp/${e}`).filter((d) => d.startsWith(RUN_DIR_PREFIX));
  if (runDirs.length || orphans.length) {
    // its pods' namespaces and containerd's mounts are told apart from others' only by a run having been here
    for (const m of mountsUnder(RUN_DIR_PREFIX, new Set()).reverse()) await quiet(sh('umount', ['-l', m]));
    const podNetns = existsSync('/run/netns') ? readdirSync('/run/netns').filter((n) => n.startsWith('cni-')) : [];
    for (const ns of podNetns) await quiet(sh('ip', ['netns', 'delete', ns]));
    if (podNetns.length) removed.push(`${podNetns.length} pod network namespaces`);
    removeCgroups();
  }
  for (const d of runDirs) rmSync(d, { recursive: true, force: true });
  removed.push(...runDirs);
  for (const d of ['/var/log/pods', '/var/log/containers']) {
    const stale = existsSync(d) ? readdirSync(d) : [];
    for (const e of stale) rmSync(join(d, e), { recursive: true, force: true });
    if (stale.length) removed.push(`${stale.length} entries of ${d}`);
  }
  if (removed.length) log(`removed what an earlier run left behind: ${removed.join(', ')}`);
}

/** The node's namespace (its veth end, bridge, iptables and nftables go with it), the host's veth end and routes. */
async function removeNodeNetwork(): Promise<void> {
  if (existsSync(`/run/netns/${NODE_NETNS}`)) await quiet(sh('ip', ['netns', 'delete', NODE_NETNS]));
  // `ip netns add` leaves /run/netns bind-mounted on itself (shared): undone when it was not a mount before
  // and nothing else lives there (another user's namespaces keep it busy, and it stays)
  if (!runNetnsWasMount && existsSync('/run/netns') && readdirSync('/run/netns').length === 0 && runNetnsIsMount()) await quiet(sh('umount', ['/run/netns']));
  // the host end goes with the namespace unless a process still holds it; BRIDGE: the host bridge of earlier versions
  for (const link of [VETH_HOST, BRIDGE]) if (existsSync(`/sys/class/net/${link}`)) await quiet(sh('ip', ['link', 'delete', link]));
}

export interface NodeClusterOptions {
  log?: (line: string) => void;
  /** images to import into containerd (default: every target, the pause image, NATS and PostgreSQL) */
  images?: string[];
  /**
   * Runs once the host lock is held, before what earlier runs left is cleared: where a test plants
   * such leftovers. Planted before the lock, they would land in the snapshot of another run still
   * holding the cluster, whose stop() then reports the host changed.
   */
  whenLocked?: () => void | Promise<void>;
}

export async function startNodeCluster(opts: NodeClusterOptions = {}): Promise<NodeCluster> {
  const missing = await nodeClusterMissing();
  if (missing.length) throw new Error(`cannot start the one-node cluster, missing: ${missing.join(', ')}`);
  const log = opts.log ?? (() => undefined);
  await takeHostLock(log);
  await opts.whenLocked?.();
  await clearEarlierRuns(log);
  const t0 = Date.now();
  const before = await hostSnapshot();
  const sysctlsBefore = Object.fromEntries(SYSCTLS.map((s) => [s, before[`sysctl ${s}`] as string]));
  const netnsBefore = new Set(before.netns?.split(' ').filter(Boolean));
  const foreignBefore = new Map(FOREIGN_DIRS.map((d) => [d, existsSync(d) ? new Set(readdirSync(d)) : undefined]));
  const dir = mkdtempSync(RUN_DIR_PREFIX);
  let etcdDataDir: string | undefined;
  const bin = (name: string) => (name === 'etcd' ? (apiServerBinaries().found.etcd as string) : join(k8sCache, 'bin', name));
  const procs: { name: string; p: ChildProcess }[] = [];
  const run = (name: string, cmd: string, args: string[], where: 'host' | 'node' = 'host') => {
    const file = join(dir, `${name}.log`);
    const out = createWriteStream(file);
    // nsenter execs the command: the pid is the component's own, so stop() signals the component
    const p = where === 'node' ? spawn(...inNode(cmd, args), { stdio: ['ignore', 'pipe', 'pipe'] }) : spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    // both streams into one file, ended once both are closed (ending it with the first wrote after its end)
    p.stdout?.pipe(out, { end: false });
    p.stderr?.pipe(out, { end: false });
    p.once('close', () => out.end());
    procs.push({ name, p });
    return { p, file };
  };
  const waitFor = async (what: string, check: () => Promise<boolean>, proc: { p: ChildProcess; file: string }, limitMs: number) => {
    const end = Date.now() + limitMs;
    for (;;) {
      if (proc.p.exitCode !== null) throw new Error(`${what} exited with ${proc.p.exitCode}:\n${tail(proc.file)}`);
      if (await check()) return;
      if (Date.now() > end) throw new Error(`${what} not ready after ${limitMs} ms:\n${tail(proc.file)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  const ctrSock = join(dir, 'containerd', 'containerd.sock');
  const ctr = (...args: string[]) => sh('ctr', ['-a', ctrSock, '-n', 'k8s.io', ...args]);
  const kubeconfigPath = join(dir, 'kubeconfig');
  const token = 'tasksvc-node-admin';
  const kenv = () => ({ ...process.env, KUBECONFIG: kubeconfigPath });
  const helmBins = helmBinaries().found as Record<'helm' | 'kubectl', string>;
  const kubectl = (...args: string[]) => sh(helmBins.kubectl, args, { env: kenv() });
  const helm = (...args: string[]) => sh(helmBins.helm, args, { env: kenv() });

  let dnsSync: { stop(): void; once(): Promise<void> } | undefined;
  let stopped: Promise<string[]> | undefined;
  const stop = (): Promise<string[]> => (stopped ??= teardown());
  async function teardown(): Promise<string[]> {
    dnsSync?.stop();
    const byName = (n: string) => procs.find((x) => x.name === n)?.p;
    const kill = async (p: ChildProcess | undefined) => {
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    };
    // 1. Let the kubelet tear pods down itself (CNI DEL releases addresses and netns), with a deadline;
    //    the controllers and scheduler stop first so that nothing recreates them.
    const kubelet = byName('kubelet');
    if (kubelet && kubelet.exitCode === null && existsSync(kubeconfigPath)) {
      await kill(byName('kube-controller-manager'));
      await kill(byName('kube-scheduler'));
      await quiet(kubectl('delete', 'pods', '--all', '--all-namespaces', '--grace-period=1', '--wait=false'));
      const end = Date.now() + 60_000;
      while ((await ctr('tasks', 'ls', '-q').catch(() => '')) && Date.now() < end) await new Promise((r) => setTimeout(r, 500));
    }
    // Whatever is still running gets killed through containerd while it is up.
    if (byName('containerd')?.exitCode === null) {
      for (const id of (await ctr('tasks', 'ls', '-q').catch(() => '')).split('\n').filter(Boolean)) {
        await quiet(ctr('tasks', 'kill', '-a', '-s', 'SIGKILL', id));
        await quiet(ctr('tasks', 'delete', '-f', id));
      }
    }
    // 2. Processes, newest first (kubelet before containerd, apiserver before etcd).
    for (const { p } of [...procs].reverse()) await kill(p);
    // 3. Whatever containerd left: shims and containers under our directory, found by pid.
    killAll(pidsMentioning(dir));
    for (const m of mountsUnder(`${dir}/`, netnsBefore).reverse()) await quiet(sh('umount', ['-l', m]));
    const problems: string[] = [];
    // 4. Network: pod namespaces, the node's namespace with everything in it (bridge, kube-proxy's
    //    chains, the firewall's table), the veth and the host routes through it; sysctls.
    if (existsSync('/run/netns')) {
      for (const ns of readdirSync('/run/netns')) if (ns.startsWith('cni-') && !netnsBefore.has(ns)) await quiet(sh('ip', ['netns', 'delete', ns]));
    }
    await removeNodeNetwork();
    for (const [k, v] of Object.entries(sysctlsBefore)) if (v !== '(absent)') await quiet(sh('sysctl', ['-q', '-w', `${k}=${v}`]));
    // 5. Files and cgroups outside our directory.
    rmSync('/var/lib/cni/networks/tasksvc-node', { recursive: true, force: true });
    if (existsSync('/var/lib/cni/results')) for (const f of readdirSync('/var/lib/cni/results')) if (f.startsWith('tasksvc-node-')) rmSync(join('/var/lib/cni/results', f), { force: true });
    for (const [d, entries] of foreignBefore) {
      if (!entries) rmSync(d, { recursive: true, force: true });
      else if (existsSync(d)) for (const e of readdirSync(d)) if (!entries.has(e)) rmSync(join(d, e), { recursive: true, force: true });
    }
    removeCgroups();
    rmSync(dir, { recursive: true, force: true });
    if (etcdDataDir) rmSync(etcdDataDir, { recursive: true, force: true });
    // 6. Compare with the snapshot.
    const after = await hostSnapshot();
    for (const [k, v] of Object.entries(before)) if (after[k] !== v) problems.push(`${k} changed:\n  before: ${v}\n  after:  ${after[k]}`);
    rmSync(HOST_LOCK, { force: true });
    return problems;
  }

  try {
    // ---- network: the node's namespace, a veth to the host, the pod bridge inside, host routes to pods and Services ----
    const ipNode = (...args: string[]) => sh('ip', ['-n', NODE_NETNS, ...args]);
    await sh('ip', ['netns', 'add', NODE_NETNS]);
    await sh('ip', ['link', 'add', VETH_HOST, 'type', 'veth', 'peer', 'name', VETH_NODE, 'netns', NODE_NETNS]);
    await sh('ip', ['addr', 'add', `${HOST_IP}/${LINK_PREFIX}`, 'dev', VETH_HOST]);
    await sh('ip', ['addr', 'add', `${OUTSIDE_IP}/${LINK_PREFIX}`, 'dev', VETH_HOST]);
    await sh('ip', ['link', 'set', VETH_HOST, 'up']);
    await ipNode('link', 'set', 'lo', 'up');
    await ipNode('addr', 'add', `${NODE_IP}/${LINK_PREFIX}`, 'dev', VETH_NODE);
    await ipNode('link', 'set', VETH_NODE, 'up');
    await ipNode('route', 'add', 'default', 'via', HOST_IP);
    // the kubelet refuses a loopback node IP, and CNI wants the bridge to exist with the gateway address
    await ipNode('link', 'add', BRIDGE, 'type', 'bridge');
    await ipNode('addr', 'add', `${POD_GATEWAY}/24`, 'dev', BRIDGE);
    await ipNode('link', 'set', BRIDGE, 'up');
    await sh(...inNode('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']));
    for (const net of [POD_CIDR, SERVICE_CIDR]) await sh('ip', ['route', 'add', net, 'via', NODE_IP, 'dev', VETH_HOST]);
    const cniDir = join(dir, 'cni');
    mkdirSync(cniDir);
    writeFileSync(
      join(cniDir, '10-tasksvc.conflist'),
      JSON.stringify({
        cniVersion: '0.4.0',
        name: 'tasksvc-node',
        plugins: [
          {
            type: 'bridge',
            bridge: BRIDGE,
            isGateway: true,
            ipMasq: false,
            hairpinMode: true,
            // routes only to the pod and Service ranges and the host's veth end (API server, forwarders): pods
            // reach nothing else
            ipam: { type: 'host-local', ranges: [[{ subnet: POD_CIDR, gateway: POD_GATEWAY }]], routes: [{ dst: SERVICE_CIDR }, { dst: `${HOST_IP}/32` }] },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      }),
    );

    // ---- containerd ----
    const cdir = join(dir, 'containerd');
    mkdirSync(cdir);
    const defaults = await sh('containerd', ['config', 'default']);
    const config = defaults
      .replace(/^root = .*$/m, `root = "${join(cdir, 'root')}"`)
      .replace(/^state = .*$/m, `state = "${join(cdir, 'state')}"`)
      .replace(/(\[grpc\]\s*\n\s*address = ).*$/m, `$1"${ctrSock}"`)
      .replace(/sandbox_image = .*$/m, `sandbox_image = "${PAUSE_IMAGE}"`)
      .replace(/restrict_oom_score_adj = .*$/m, 'restrict_oom_score_adj = true')
      .replace(/bin_dir = "\/opt\/cni\/bin"/, 'bin_dir = "/usr/lib/cni"')
      .replace(/conf_dir = "\/etc\/cni\/net.d"/, `conf_dir = "${cniDir}"`)
      .replace(/path = "\/opt\/containerd"/, `path = "${join(cdir, 'opt')}"`)
      .replace(/SystemdCgroup = .*$/m, 'SystemdCgroup = false');
    writeFileSync(join(cdir, 'config.toml'), config);
    const containerd = run('containerd', 'containerd', ['--config', join(cdir, 'config.toml')], 'node');
    await waitFor('containerd', async () => (await ctr('version').then(() => true, () => false)), containerd, 30_000);
    const images = opts.images ?? [...TARGETS.map(imageName), PAUSE_IMAGE, NATS_IMAGE, POSTGRES_IMAGE];
    const archive = join(dir, 'images.tar');
    const ti = Date.now();
    await podman('save', '--format', 'docker-archive', '-m', '-o', archive, ...images);
    await ctr('images', 'import', archive);
    rmSync(archive);
    log(`${images.length} images imported into containerd in ${((Date.now() - ti) / 1000).toFixed(0)} s`);

    // ---- etcd + kube-apiserver on the host's veth end (pods reach it through the kubernetes Service) ----
    // host ports; the node's (kubelet, kube-proxy) are its own namespace's, so the standard ones
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    // Each component authenticates with its own token; they are cluster admins (a test cluster).
    const tokens = { admin: token, kubelet: 'tasksvc-node-kubelet', scheduler: 'tasksvc-node-scheduler', cm: 'tasksvc-node-cm', proxy: 'tasksvc-node-proxy' };
    writeFileSync(
      join(dir, 'tokens.csv'),
      [
        `${tokens.admin},admin,admin,"system:masters"`,
        `${tokens.kubelet},system:node:${NODE_NAME},kubelet,"system:nodes,system:masters"`,
        `${tokens.scheduler},system:kube-scheduler,scheduler,"system:masters"`,
        `${tokens.cm},system:kube-controller-manager,cm,"system:masters"`,
        `${tokens.proxy},system:kube-proxy,proxy,"system:masters"`,
        '',
      ].join('\n'),
    );
    const { args: etcdArgs, dataDir: etcdDir, url: etcdUrl } = etcdSetup('node', etcdPort, peerPort);
    etcdDataDir = etcdDir;
    const etcd = run('etcd', bin('etcd'), etcdArgs);
    await waitFor('etcd', async () => await fetch(`${etcdUrl}/health`).then((r) => r.ok, () => false), etcd, 30_000);
    const server = `https://${HOST_IP}:${apiPort}`;
    const certDir = join(dir, 'certs');
    mkdirSync(certDir);
    const api = run('kube-apiserver', bin('kube-apiserver'), [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${HOST_IP}`,
      `--advertise-address=${HOST_IP}`,
      `--secure-port=${apiPort}`,
      '--insecure-port=0',
      `--cert-dir=${certDir}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      '--kubelet-preferred-address-types=InternalIP',
      '--allow-privileged=true',
    ]);
    await waitFor('kube-apiserver', async () => (await apiGet(`${server}/readyz`, token)).status === 200, api, 120_000);
    const kubeconfig = (tok: string) =>
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters:\n- name: node\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
        `users:\n- name: u\n  user:\n    token: ${tok}`,
        'contexts:\n- name: node\n  context:\n    cluster: node\n    user: u\n    namespace: default',
        'current-context: node',
        '',
      ].join('\n');
    const kc = (name: keyof typeof tokens) => {
      const file = name === 'admin' ? kubeconfigPath : join(dir, `${name}.kubeconfig`);
      writeFileSync(file, kubeconfig(tokens[name]));
      return file;
    };
    kc('admin');
    log(`kube-apiserver ready on ${server}`);

    // ---- controllers, scheduler ----
    run('kube-controller-manager', bin('kube-controller-manager'), [
      `--kubeconfig=${kc('cm')}`,
      '--leader-elect=false',
      `--service-account-private-key-file=${join(dir, 'sa.key')}`,
      // the API server's self-signed serving chain: pods verify it through their service account's ca.crt
      `--root-ca-file=${join(certDir, 'apiserver.crt')}`,
      // what the operator's defaults need besides Deployments: StatefulSets (its NATS), volume binding and
      // protection (NATS and database volumes), PodDisruptionBudgets (disruption)
      '--controllers=deployment,replicaset,daemonset,statefulset,job,cronjob,garbagecollector,namespace,serviceaccount,serviceaccount-token,endpoint,endpointslice,podgc,nodelifecycle,nodeipam,clusterrole-aggregation,root-ca-cert-publisher,persistentvolume-binder,pvc-protection,pv-protection,attachdetach,disruption',
      // node.spec.podCIDR, as on a kubeadm cluster (the operator's firewall reads the pod network from it)
      '--allocate-node-cidrs=true',
      `--cluster-cidr=${POD_CIDR}`,
      '--node-cidr-mask-size=24',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--secure-port=0',
      '--port=0',
    ]);
    run('kube-scheduler', bin('kube-scheduler'), [`--kubeconfig=${kc('scheduler')}`, '--leader-elect=false', '--port=0', '--secure-port=0']);

    // ---- cluster DNS (a stand-in for CoreDNS, dns.ts): dnsmasq on the pod bridge's gateway in the node's
    //      namespace, its hosts file kept in step with Services and Endpoints by this process ----
    const dnsDir = join(dir, 'dns');
    mkdirSync(dnsDir);
    const hostsFile = join(dnsDir, 'hosts');
    writeFileSync(hostsFile, '');
    const dnsmasq = run('dnsmasq', 'dnsmasq', dnsmasqArgs(CLUSTER_DNS, hostsFile, join(dnsDir, 'dnsmasq.pid')), 'node');
    dnsSync = syncClusterDns({
      hostsFile,
      list: (path) => apiGet(`${server}${path}`, token),
      reload: () => {
        if (dnsmasq.p.exitCode === null) dnsmasq.p.kill('SIGHUP');
      },
    });

    // ---- kubelet, in the node's namespace ----
    const kdir = join(dir, 'kubelet');
    mkdirSync(kdir);
    const kubelet = run('kubelet', bin('kubelet'), [
      `--kubeconfig=${kc('kubelet')}`,
      '--container-runtime=remote',
      `--container-runtime-endpoint=unix://${ctrSock}`,
      `--image-service-endpoint=unix://${ctrSock}`,
      '--cgroup-driver=cgroupfs',
      '--fail-swap-on=false',
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      `--address=${NODE_IP}`,
      `--port=${KUBELET_PORT}`,
      '--read-only-port=0',
      '--healthz-bind-address=127.0.0.1',
      '--make-iptables-util-chains=false',
      `--root-dir=${kdir}`,
      `--cert-dir=${join(kdir, 'pki')}`,
      `--pod-infra-container-image=${PAUSE_IMAGE}`,
      // never garbage-collect the imported images (nothing could pull them back)
      '--image-gc-high-threshold=100',
      '--image-gc-low-threshold=99',
      '--eviction-hard=',
      '--serialize-image-pulls=false',
      `--cluster-dns=${CLUSTER_DNS}`,
      `--cluster-domain=${CLUSTER_DOMAIN}`,
    ], 'node');
    await waitFor(
      'node Ready',
      async () => (await kubectl('get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}').catch(() => '')) === 'True',
      kubelet,
      120_000,
    );
    log(`node ${NODE_NAME} Ready after ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    // ---- kube-proxy: Services by iptables in the node's namespace, kernel-wide conntrack sysctls left alone (zeros) ----
    run('kube-proxy', bin('kube-proxy'), [
      `--kubeconfig=${kc('proxy')}`,
      '--proxy-mode=iptables',
      `--hostname-override=${NODE_NAME}`,
      `--cluster-cidr=${POD_CIDR}`,
      `--nodeport-addresses=${NODE_IP}/32`,
      '--conntrack-max-per-core=0',
      '--conntrack-tcp-timeout-established=0',
      '--conntrack-tcp-timeout-close-wait=0',
      '--oom-score-adj=0',
      '--healthz-bind-address=127.0.0.1:10256',
      '--metrics-bind-address=127.0.0.1:10249',
    ], 'node');

    // ---- the default StorageClass: local volumes under our directory, bound when a pod is scheduled ----
    const volumes = join(dir, 'volumes');
    const pvs = Array.from({ length: LOCAL_VOLUMES }, (_, i) => {
      const path = join(volumes, `pv-${i}`);
      mkdirSync(path, { recursive: true, mode: 0o777 });
      // any uid writes it (NATS runs as 1000, PostgreSQL as Debian's postgres): fsGroup does not apply to local volumes
      chmodSync(path, 0o777);
      return {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `local-pv-${i}` },
        spec: {
          capacity: { storage: LOCAL_VOLUME_SIZE },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: STORAGE_CLASS,
          local: { path },
          nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } },
        },
      };
    });
    const storageClass = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Retain',
    };
    writeFileSync(join(dir, 'storage.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [storageClass, ...pvs] }));
    await kubectl('apply', '-f', join(dir, 'storage.json'));

    // ---- DNS ready: a pod's question (from the node's namespace, as pods reach the bridge) is answered ----
    await dnsSync.once();
    await waitFor(
      'cluster DNS',
      async () => (await sh(...inNode(process.execPath, ['-e', DNS_PROBE, CLUSTER_DNS, `kubernetes.default.svc.${CLUSTER_DOMAIN}`])).catch(() => '')) === '10.96.0.1',
      dnsmasq,
      30_000,
    );
    log(`cluster DNS answers on ${CLUSTER_DNS}; ${LOCAL_VOLUMES} local volumes in StorageClass ${STORAGE_CLASS} (default)`);
    return { server, token, kubeconfigPath, dir, nodeIp: NODE_IP, hostIp: HOST_IP, kubectl, helm, stop };
  } catch (err) {
    const problems = await stop();
    if (problems.length) log(`teardown after a failed start left:\n${problems.join('\n')}`);
    throw err;
  }
}

/** Pids of processes whose command line names `dir` (containerd shims, runc, containers' init). */
function pidsMentioning(dir: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(dir)) out.push(Number(e));
    } catch {
      /* exited */
    }
  }
  return out;
}

/** SIGKILL to each of `pids` that is still there. */
function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
}

/** Mounts ours: under our directory (`prefix`), our pods' network namespaces, containerd's /run/containerd. */
function mountsUnder(prefix: string, netnsBefore: Set<string>): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(prefix) || m.startsWith('/run/containerd/') || (m.startsWith('/run/netns/cni-') && !netnsBefore.has(m.slice('/run/netns/'.length))));
}

/** The kubelet's and containerd's cgroups (kubepods, k8s.io) in every hierarchy, deepest first. */
function removeCgroups(): void {
  const roots: string[] = [];
  for (const h of readdirSync('/sys/fs/cgroup')) {
    for (const name of ['kubepods', 'k8s.io']) {
      const p = join('/sys/fs/cgroup', h, name);
      if (existsSync(p)) roots.push(p);
    }
  }
  const walk = (p: string) => {
    for (const e of readdirSync(p)) {
      const c = join(p, e);
      try {
        if (statSync(c).isDirectory()) walk(c);
      } catch {
        /* gone */
      }
    }
    try {
      rmdirSync(p);
    } catch {
      /* busy or gone */
    }
  };
  for (const r of roots) walk(r);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const c = await startNodeCluster({ log: (l) => console.log(`[node] ${l}`) });
  console.log(`[node] ready: export KUBECONFIG=${c.kubeconfigPath}   (Ctrl-C stops it and restores the host)`);
  const bye = () =>
    void c.stop().then((problems) => {
      if (problems.length) console.error(`[node] host not fully restored:\n${problems.join('\n')}`);
      process.exit(problems.length ? 1 : 0);
    });
  process.once('SIGINT', bye);
  process.once('SIGTERM', bye);
}
