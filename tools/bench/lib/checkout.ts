import { execFileSync } from 'node:child_process';
import { basename, join, resolve } from 'node:path';
import { STANDALONE_ENV } from '@tasksvc/runtime';
import { CLUSTER_SERVICES, type startCluster } from '../../chaos/cluster.ts';

/**
 * Another checkout of this repository whose system a bench runs beside this one's (http.ts
 * `--other`, hops.ts `--base`): a change's before and after measured in the same rounds, under the
 * same load of the machine, rather than on different days. The checkout must be installed
 * (`node tools/bootstrap.mjs install` in it).
 */
export interface Checkout {
  root: string;
  /** for the rows: the folder and its commit */
  name: string;
  /** its STANDALONE_NODE_FLAGS and STANDALONE_ENV: a commit's service processes as its images ran them */
  nodeFlags: readonly string[];
  env: Record<string, string>;
}

export async function checkout(dir: string): Promise<Checkout> {
  const root = resolve(dir);
  const sha = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const gc = (await import(join(root, 'services', 'runtime', 'src', 'gc-tuning.ts'))) as { STANDALONE_NODE_FLAGS: readonly string[]; STANDALONE_ENV?: Record<string, string> };
  const own = gc.STANDALONE_ENV ?? {};
  // startCluster sets this checkout's STANDALONE_ENV: a variable the other one did not set is given
  // empty, which glibc ignores (its default), as unset
  const env = { ...Object.fromEntries(Object.keys(STANDALONE_ENV).map((k) => [k, ''])), ...own };
  return { root, name: `${basename(root)}@${sha}`, nodeFlags: gc.STANDALONE_NODE_FLAGS, env };
}

/** startCluster's options that run every service from `from`, with its node flags. */
export function clusterFrom(from: Checkout): Pick<NonNullable<Parameters<typeof startCluster>[1]>, 'nodeFlags' | 'sourceRoots'> {
  return { nodeFlags: from.nodeFlags, sourceRoots: Object.fromEntries(CLUSTER_SERVICES.map((n) => [n, from.root])) };
}
