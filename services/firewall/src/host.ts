// Facts read from the running system (Linux /proc): what the first start must keep reachable and
// which interfaces face the outside. Parsing is pure; the readers take the /proc root for tests.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** Listening TCP sockets of /proc/net/tcp or tcp6 text: inode -> port. */
export function listeningSockets(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // local_address is HEXIP:HEXPORT, st 0A = LISTEN, inode is field 9.
    if (f.length < 10 || f[3] !== '0A') continue;
    const port = parseInt(f[1]!.split(':')[1] ?? '', 16);
    if (port > 0) out.set(f[9]!, port);
  }
  return out;
}

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** TCP ports the SSH daemon (process name sshd) listens on in this network namespace, sorted. */
export function sshdPorts(proc = '/proc'): number[] {
  const sockets = new Map([...listeningSockets(read(join(proc, 'net/tcp'))), ...listeningSockets(read(join(proc, 'net/tcp6')))]);
  if (!sockets.size) return [];
  const ports = new Set<number>();
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  for (const pid of pids) {
    if (read(join(proc, pid, 'comm')).trim() !== 'sshd') continue;
    let fds: string[];
    try {
      fds = readdirSync(join(proc, pid, 'fd'));
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(join(proc, pid, 'fd', fd)));
        const port = m ? sockets.get(m[1]!) : undefined;
        if (port) ports.add(port);
      } catch {
        // fd closed meanwhile
      }
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** Interfaces with an IPv4 or IPv6 default route (/proc/net/route, /proc/net/ipv6_route). */
export function defaultRouteInterfaces(proc = '/proc'): string[] {
  const out = new Set<string>();
  for (const line of read(join(proc, 'net/route')).split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length > 7 && f[1] === '00000000' && f[7] === '00000000') out.add(f[0]!);
  }
  for (const line of read(join(proc, 'net/ipv6_route')).split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 10 && /^0{32}$/.test(f[0]!) && f[1] === '00' && f[9] !== 'lo') out.add(f[9]!);
  }
  return [...out].sort();
}
