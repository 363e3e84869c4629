/**
 * Cluster DNS for the one-node cluster (node.ts; issue 59), a stand-in for CoreDNS (not packaged by Debian):
 * Debian's dnsmasq answers `*.svc.cluster.local` from a hosts file that this module keeps in step with
 * the API server's Services and Endpoints, the records CoreDNS's kubernetes plugin would serve:
 *   <service>.<namespace>.svc.cluster.local            → its cluster IP, or (headless) every ready endpoint
 *   <hostname>.<service>.<namespace>.svc.cluster.local → a headless Service's pod with a hostname (StatefulSets)
 * Every other name in the cluster domain is NXDOMAIN; nothing is forwarded (pods reach nothing outside).
 */
import { renameSync, writeFileSync } from 'node:fs';

export const CLUSTER_DOMAIN = 'cluster.local';

interface Address {
  ip: string;
  hostname?: string;
}
interface ServiceList {
  items: { metadata: { name: string; namespace: string }; spec: { clusterIP?: string; publishNotReadyAddresses?: boolean } }[];
}
interface EndpointsList {
  items: { metadata: { name: string; namespace: string }; subsets?: { addresses?: Address[]; notReadyAddresses?: Address[] }[] }[];
}

/** The hosts file (sorted, so an unchanged cluster gives the same text) for these Services and Endpoints. */
export function clusterDnsHosts(services: ServiceList, endpoints: EndpointsList, domain = CLUSTER_DOMAIN): string {
  const byName = new Map(endpoints.items.map((e) => [`${e.metadata.namespace}/${e.metadata.name}`, e]));
  const lines: string[] = [];
  for (const s of services.items) {
    const fqdn = `${s.metadata.name}.${s.metadata.namespace}.svc.${domain}`;
    if (s.spec.clusterIP && s.spec.clusterIP !== 'None') {
      lines.push(`${s.spec.clusterIP} ${fqdn}`);
      continue;
    }
    for (const sub of byName.get(`${s.metadata.namespace}/${s.metadata.name}`)?.subsets ?? []) {
      for (const a of [...(sub.addresses ?? []), ...(s.spec.publishNotReadyAddresses ? (sub.notReadyAddresses ?? []) : [])]) {
        lines.push(`${a.ip} ${fqdn}`);
        if (a.hostname) lines.push(`${a.ip} ${a.hostname}.${fqdn}`);
      }
    }
  }
  return [...new Set(lines)].sort().join('\n') + '\n';
}

/** dnsmasq's arguments: answers from `hostsFile` only, on `address`:`port`, in the foreground, logging to stderr. */
export function dnsmasqArgs(address: string, hostsFile: string, pidFile: string, port = 53, domain = CLUSTER_DOMAIN): string[] {
  return [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--no-resolv',
    '--no-hosts',
    `--addn-hosts=${hostsFile}`,
    // the cluster domain is answered locally only: an unknown name is NXDOMAIN, so a resolver walking the
    // pod's search list goes on to the next candidate
    `--local=/${domain}/`,
    '--bind-interfaces',
    `--listen-address=${address}`,
    `--port=${port}`,
    // stays root: the hosts file lives in the run's private directory
    '--user=root',
    `--pid-file=${pidFile}`,
    '--log-facility=-',
  ];
}

/**
 * Keeps `hostsFile` in step with the cluster, polling every `everyMs`, and calls `reload` (SIGHUP to
 * dnsmasq: it re-reads the file and drops what it removed) after each change.
 */
export function syncClusterDns(opts: {
  hostsFile: string;
  list: (path: string) => Promise<{ status: number; body: string }>;
  reload: () => void;
  everyMs?: number;
}): { stop(): void; once(): Promise<void> } {
  let last = '';
  let busy = false;
  const once = async () => {
    if (busy) return;
    busy = true;
    try {
      const [svc, eps] = await Promise.all([opts.list('/api/v1/services'), opts.list('/api/v1/endpoints')]);
      if (svc.status !== 200 || eps.status !== 200) return;
      const hosts = clusterDnsHosts(JSON.parse(svc.body) as ServiceList, JSON.parse(eps.body) as EndpointsList);
      if (hosts === last) return;
      writeFileSync(`${opts.hostsFile}.tmp`, hosts);
      renameSync(`${opts.hostsFile}.tmp`, opts.hostsFile);
      last = hosts;
      opts.reload();
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void once().catch(() => undefined), opts.everyMs ?? 1000);
  timer.unref();
  return { stop: () => clearInterval(timer), once };
}
