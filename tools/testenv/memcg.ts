/**
 * A memory cgroup of the test's own, under the cgroup this process is in, with a hard limit: what a
 * container's memory limit is to the kernel (Kubernetes sets memory.max, or memory.limit_in_bytes on
 * a cgroup v1 node, to the pod's limit and the kernel OOM-kills the process that crosses it).
 *
 * cgroup v2 (memory.max, memory.peak, memory.events' oom_kill) where the memory controller is on the
 * unified hierarchy; a hybrid host, whose memory controller is bound to v1 (this machine's), gets the
 * same limit through v1 (memory.limit_in_bytes and memsw, memory.max_usage_in_bytes, memory.oom_control's
 * oom_kill). Swap is limited too (none beyond the limit), as on a Kubernetes node. Needs root (or a
 * delegated subtree); `memoryCgroup` says why when it cannot make one.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync, existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';

export interface MemoryCgroup {
  version: 1 | 2;
  path: string;
  /** a command prefix that moves the process into this cgroup before it execs the rest (pid unchanged) */
  prefix: string[];
  /** the most memory charged to the cgroup at once (bytes) */
  peakBytes(): number;
  /** processes the kernel OOM-killed in it */
  oomKills(): number;
  /** remove it (once its processes have exited) */
  remove(): void;
}

/** Where the hierarchy holding `controller` is mounted (v1), or the unified one (v2: controller undefined). */
function mountOf(controller?: string): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const [fstype, , superOptions] = post.split(' ');
    const mountPoint = pre.split(' ')[4]!;
    if (controller === undefined && fstype === 'cgroup2') return mountPoint;
    if (controller !== undefined && fstype === 'cgroup' && superOptions?.split(',').includes(controller)) return mountPoint;
  }
  return undefined;
}

/** This process's cgroup path in the hierarchy of `controller` (v1) or the unified one. */
function ownCgroup(controller?: string): string | undefined {
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [id, controllers, path] = line.split(':');
    if (controller === undefined ? id === '0' : controllers!.split(',').includes(controller)) return path;
  }
  return undefined;
}

const field = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
const enter = (procs: string) => ['sh', '-c', 'echo $$ > "$0" && exec "$@"', procs];

function v2(limitBytes: number): MemoryCgroup | string {
  const mount = mountOf();
  const own = ownCgroup();
  if (!mount || own === undefined) return 'no cgroup2 mount';
  const parent = join(mount, own);
  if (!readFileSync(join(parent, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) return `the memory controller is not on the cgroup2 hierarchy at ${mount} (bound to cgroup v1)`;
  try {
    if (!readFileSync(join(parent, 'cgroup.subtree_control'), 'utf8').includes('memory')) writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory');
  } catch (err) {
    return `cannot enable the memory controller for children of ${parent}: ${(err as Error).message}`;
  }
  const path = join(parent, `tasksvc-test-${randomUUID().slice(0, 8)}`);
  mkdirSync(path);
  writeFileSync(join(path, 'memory.max'), String(limitBytes));
  if (existsSync(join(path, 'memory.swap.max'))) writeFileSync(join(path, 'memory.swap.max'), '0');
  return {
    version: 2,
    path,
    prefix: enter(join(path, 'cgroup.procs')),
    peakBytes: () => Number(readFileSync(join(path, 'memory.peak'), 'utf8')),
    oomKills: () => field(readFileSync(join(path, 'memory.events'), 'utf8'), 'oom_kill'),
    remove: () => rmdirSync(path),
  };
}

function v1(limitBytes: number): MemoryCgroup | string {
  const mount = mountOf('memory');
  const own = ownCgroup('memory');
  if (!mount || own === undefined) return 'no cgroup v1 memory hierarchy either';
  const path = join(mount, own, `tasksvc-test-${randomUUID().slice(0, 8)}`);
  try {
    mkdirSync(path);
  } catch (err) {
    return `cannot create ${path}: ${(err as Error).message}`;
  }
  writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
  // memory + swap no higher than memory alone: no swapping past the limit (absent without swap accounting)
  if (existsSync(join(path, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(path, 'memory.memsw.limit_in_bytes'), String(limitBytes));
  return {
    version: 1,
    path,
    prefix: enter(join(path, 'cgroup.procs')),
    peakBytes: () => Number(readFileSync(join(path, 'memory.max_usage_in_bytes'), 'utf8')),
    oomKills: () => field(readFileSync(join(path, 'memory.oom_control'), 'utf8'), 'oom_kill'),
    remove: () => rmdirSync(path),
  };
}

/** A new memory cgroup limited to `limitBytes`, or why none could be made (cgroup v2 tried first). */
export function memoryCgroup(limitBytes: number): MemoryCgroup | { unavailable: string } {
  const attempt = (make: typeof v1) => {
    try {
      return make(limitBytes);
    } catch (err) {
      return (err as Error).message;
    }
  };
  const two = attempt(v2);
  if (typeof two !== 'string') return two;
  const one = attempt(v1);
  if (typeof one !== 'string') return one;
  return { unavailable: `cgroup v2: ${two}; cgroup v1: ${one}` };
}
