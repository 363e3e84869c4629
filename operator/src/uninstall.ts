/**
 * `helm uninstall`'s pre-delete hook (chart templates/uninstall-hook.yaml): deletes the TaskServices
 * the release created (Helm's meta.helm.sh/release-name and -namespace annotations name it) and waits
 * until they are gone. The operator still runs at that point, so it removes their finalizers and the
 * firewall DaemonSets in other namespaces; without the hook the operator would go first and leave
 * them stuck Terminating and a privileged DaemonSet behind. TaskServices applied by hand or by another
 * tool are never deleted: the hook lists them and leaves them running.
 *
 * Run: `node operator/src/uninstall.ts` (in-cluster service account, or $KUBECONFIG). RELEASE_NAME and
 * RELEASE_NAMESPACE name the release (unset: no TaskService counts as the release's).
 * UNINSTALL_TIMEOUT_SECONDS (default 240) bounds the wait; exit 1 names what is left.
 */
import { ApiException, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { GROUP, PLURAL, VERSION } from './crd.ts';

type Meta = { name: string; namespace: string; annotations?: Record<string, string> };
type Listed = { items: { metadata: Meta }[] };

export interface Release {
  name: string;
  namespace: string;
}

/** Whether Helm created this object for the release (Helm ≥ 3.2 annotates everything it installs). */
export const createdBy = (m: Meta, release: Release | undefined): boolean =>
  release !== undefined && m.annotations?.['meta.helm.sh/release-name'] === release.name && m.annotations?.['meta.helm.sh/release-namespace'] === release.namespace;

/** Deletes the release's TaskServices, then waits; resolves with those still there at the deadline (empty: all gone). */
export async function deleteReleaseTaskServices(
  api: CustomObjectsApi,
  opts: { release: Release | undefined; timeoutMs: number; log: (line: string) => void },
): Promise<string[]> {
  const list = async () =>
    ((await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as Listed).items.map((t) => t.metadata).filter((m) => createdBy(m, opts.release));
  const others = ((await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as Listed).items
    .map((t) => t.metadata)
    .filter((m) => !createdBy(m, opts.release));
  if (others.length) {
    opts.log(
      `leaving ${others.length} TaskService(s) the release did not create: ${others.map((m) => `${m.namespace}/${m.name}`).join(', ')} ` +
        `(they keep running; without the operator nothing reconciles them, see docs/kubernetes.md "Uninstalling")`,
    );
  }
  const all = await list();
  opts.log(all.length ? `deleting ${all.length} TaskService(s): ${all.map((m) => `${m.namespace}/${m.name}`).join(', ')}` : 'no TaskService of the release to delete');
  for (const m of all) {
    await api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: m.namespace, name: m.name }).catch((err: unknown) => {
      if (!(err instanceof ApiException && err.code === 404)) throw err;
    });
  }
  const end = Date.now() + opts.timeoutMs;
  let reported = '';
  for (;;) {
    const left = (await list()).map((m) => `${m.namespace}/${m.name}`);
    if (!left.length || Date.now() > end) return left;
    if (left.join() !== reported) opts.log(`waiting for the operator to clean up: ${(reported = left.join())}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const seconds = Number(process.env.UNINSTALL_TIMEOUT_SECONDS ?? 240);
  if (!Number.isInteger(seconds) || seconds < 1) {
    process.stderr.write('taskservice-uninstall: UNINSTALL_TIMEOUT_SECONDS must be a whole number of seconds (at least 1)\n');
    process.exit(1);
  }
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const log = (line: string) => process.stdout.write(`[uninstall] ${line}\n`);
  const release = process.env.RELEASE_NAME && process.env.RELEASE_NAMESPACE ? { name: process.env.RELEASE_NAME, namespace: process.env.RELEASE_NAMESPACE } : undefined;
  const left = await deleteReleaseTaskServices(kc.makeApiClient(CustomObjectsApi), { release, timeoutMs: seconds * 1000, log });
  if (left.length) {
    process.stderr.write(
      `taskservice-uninstall: still there after ${seconds} s: ${left.join(', ')}. Is the operator running? ` +
        `See docs/kubernetes.md "Uninstalling" to remove the finalizer tasks.example.io/cleanup by hand.\n`,
    );
    process.exit(1);
  }
  log("every TaskService of the release is gone");
}
