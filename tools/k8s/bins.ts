/**
 * The one place tests and scripts find the Kubernetes test binaries. Each can be overridden by an
 * environment variable; the defaults are the caches filled by ensure-apiserver.sh and ensure-helm.sh.
 */
import { accessSync, constants } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const K8S_VERSION = '1.20.2';
const k8sCache = process.env.TASKSVC_K8S_CACHE ?? `/var/cache/task-service/k8s-${K8S_VERSION}`;
const helmCache = process.env.TASKSVC_HELM_CACHE ?? '/var/cache/task-service/helm-v3.17.2';

const executable = (p: string | undefined): p is string => {
  if (!p) return false;
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

const onPath = (name: string): string | undefined => {
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
};

export interface Binaries {
  found: Record<string, string>;
  missing: string[];
}

function locate(spec: Record<string, { env: string; fallback: () => string | undefined }>): Binaries {
  const found: Record<string, string> = {};
  const missing: string[] = [];
  for (const [name, { env, fallback }] of Object.entries(spec)) {
    const p = process.env[env] || fallback();
    if (executable(p)) found[name] = p;
    else missing.push(`${name} (set ${env}${p ? `; ${p} is not executable` : ''})`);
  }
  return { found, missing };
}

/** etcd, kube-apiserver and kube-controller-manager for the L3 tests. */
export const apiServerBinaries = (): Binaries =>
  locate({
    etcd: { env: 'ETCD_BIN', fallback: () => onPath('etcd') },
    'kube-apiserver': { env: 'KUBE_APISERVER_BIN', fallback: () => join(k8sCache, 'bin', 'kube-apiserver') },
    'kube-controller-manager': { env: 'KUBE_CONTROLLER_MANAGER_BIN', fallback: () => join(k8sCache, 'bin', 'kube-controller-manager') },
  });

/** helm (and kubectl) for the chart tests. */
export const helmBinaries = (): Binaries =>
  locate({
    helm: { env: 'HELM_BIN', fallback: () => join(helmCache, 'bin', 'helm') },
    kubectl: { env: 'KUBECTL_BIN', fallback: () => join(helmCache, 'bin', 'kubectl') },
  });

/**
 * Whether a test needing `bins` runs. In CI (CI=true) missing binaries are a failure, never a skip;
 * elsewhere the test is skipped with a loud reason naming the script that provides them.
 */
export function requireBinaries(bins: Binaries, script: string): { run: boolean; reason: string } {
  if (bins.missing.length === 0) return { run: true, reason: '' };
  const reason = `missing ${bins.missing.join(', ')}: run ${script}`;
  if (process.env.CI === 'true') throw new Error(`CI requires the Kubernetes test binaries: ${reason}`);
  console.warn(`\n*** SKIPPING: ${reason} ***\n`);
  return { run: false, reason };
}
