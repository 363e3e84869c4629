/**
 * Pure: what a node needs open so the firewall daemon never cuts it off from its cluster, derived
 * from what the API server says about the cluster (nodes, the API server's endpoints, kubeadm's
 * networking) and from spec.firewall. The reconciler gathers the facts; desired.ts renders the result.
 */
import type { TaskServiceSpec } from './types.ts';

/** Facts about the cluster the firewall must respect; all read by the reconciler. */
export interface ClusterFacts {
  nodes: { name: string; addresses: string[]; podCIDRs: string[]; controlPlane: boolean }[];
  /** the `kubernetes` Endpoints in `default`: where the API server really listens */
  apiServer: { ip: string; port: number }[];
  /** networking of kubeadm's ClusterConfiguration (kube-system/kubeadm-config), when present */
  kubeadm?: { podSubnet?: string; serviceSubnet?: string };
}

export interface NodeAllowances {
  /** source networks accepted on every port: pods, services, every node (kubelet, CNI, etcd, API server) */
  networks: string[];
  /** ports open to every source, for the first ruleset (rules.json) */
  tcp: { port: string; description: string; ssh?: boolean }[];
  udp: { port: string; description: string }[];
  /** FIREWALL_SELF_CONFIRM: the API server and this node's kubelet must stay reachable ($(NODE_IP) is expanded by the kubelet) */
  selfConfirm: string;
}

/** Standard control-plane labels (kubeadm before and since 1.20). */
export const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

const hostNet = (ip: string) => (ip.includes(':') ? `${ip}/128` : `${ip}/32`);
const unique = <T>(xs: T[]) => [...new Set(xs)];

/** The firewall config's CIDR shape (spec: dotted IPv4 + 1–2 digit prefix, or hex/colon IPv6 + 1–3 digits). */
const CIDR = /^(?:(?:[0-9]{1,3}\.){3}[0-9]{1,3}\/[0-9]{1,2}|[0-9A-Fa-f:]+\/[0-9]{1,3})$/;

/**
 * Everything a node must keep reachable, or the reason it cannot be derived (then no firewall runs:
 * a firewall that does not know the pod network would drop kubelet probes' answers and metrics).
 */
export function nodeAllowances(spec: TaskServiceSpec, facts: ClusterFacts): NodeAllowances | { problem: string } {
  const fw = spec.firewall;
  const podCIDRs = unique([...(fw.podCIDRs ?? []), ...facts.nodes.flatMap((n) => n.podCIDRs), ...(facts.kubeadm?.podSubnet?.split(',') ?? [])]).filter(Boolean);
  if (podCIDRs.length === 0) {
    return { problem: 'the pod network is unknown (no node has spec.podCIDRs and there is no kubeadm-config): set spec.firewall.podCIDRs' };
  }
  const serviceCIDRs = unique([...(fw.serviceCIDR ? [fw.serviceCIDR] : []), ...(facts.kubeadm?.serviceSubnet?.split(',') ?? [])]).filter(Boolean);
  if (facts.apiServer.length === 0) return { problem: 'the API server endpoints (Endpoints default/kubernetes) are unknown' };
  const nodeIPs = facts.nodes.flatMap((n) => n.addresses).map(hostNet);
  const apiIPs = facts.apiServer.map((e) => hostNet(e.ip));
  const networks = unique([...podCIDRs, ...serviceCIDRs, ...nodeIPs, ...apiIPs]);
  const bad = networks.find((n) => !CIDR.test(n));
  if (bad) return { problem: `not a CIDR the firewall accepts: ${bad}` };

  const apiPorts = unique(facts.apiServer.map((e) => e.port));
  const tcp = [
    { port: '22', description: 'ssh', ssh: true },
    { port: fw.nodePortRange, description: 'Kubernetes NodePort services' },
    // Only where the API server may run: its clients (kubectl, load balancers) are not cluster members.
    ...(fw.controlPlane ? apiPorts.map((p) => ({ port: String(p), description: 'Kubernetes API server' })) : []),
  ];
  const udp = [{ port: fw.nodePortRange, description: 'Kubernetes NodePort services' }];
  const selfConfirm = [...facts.apiServer.map((e) => `tcp:${e.ip}:${e.port}`), `tcp:$(NODE_IP):${fw.kubeletPort}`].join(',');
  return { networks, tcp, udp, selfConfirm };
}

/**
 * One firewall per node: of all TaskServices with the firewall on, the oldest (then by namespace/name)
 * runs it. Deterministic, so two reconciles racing each other agree without coordination.
 */
export function firewallWinner(candidates: { namespace: string; name: string; creationTimestamp?: string }[]): { namespace: string; name: string } | undefined {
  return [...candidates].sort(
    (a, b) => (a.creationTimestamp ?? '').localeCompare(b.creationTimestamp ?? '') || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`),
  )[0];
}
