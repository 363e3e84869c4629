// Container bridge detection: every interface with a /sys/class/net/<if>/bridge directory.
import { existsSync, readdirSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { isLinkLocal, networkOf } from './net.ts';
import type { Bridge } from './ruleset.ts';

export function detectBridges(sysNet = '/sys/class/net'): Bridge[] {
  let names: string[];
  try {
    names = readdirSync(sysNet);
  } catch {
    return [];
  }
  const addrs = networkInterfaces();
  return names
    .filter((n) => existsSync(join(sysNet, n, 'bridge')))
    .sort()
    .map((name) => ({
      name,
      networks: (addrs[name] ?? [])
        .map((a) => a.cidr)
        .filter((c): c is string => !!c)
        .map(networkOf)
        .filter((c) => !isLinkLocal(c)),
    }));
}
