/** CPU time of the bench's own process, of other processes and of its local PostgreSQL, for per-operation CPU figures (steadier than rates on a shared machine). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** USER_HZ is 100 on Linux */
const TICK_MS = 10;
/** indexes into procStat's fields (stat(5) fields 4, 14–17) */
export const PPID = 1;
const UTIME = 11;
const STIME = 12;
const CUTIME = 13;
const CSTIME = 14;

/** utime + stime (ms) of this process. */
export function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * utime + stime (ms) of a PostgreSQL server started by startLocalPostgres({ dataDir }): the
 * postmaster, its live backends, and (the postmaster's cutime + cstime) every child it has reaped:
 * parallel query workers and autovacuum workers live for seconds and would otherwise go uncounted.
 */
export function postgresCpuMs(dataDir: string): number {
  const postmaster = Number(readFileSync(join(dataDir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  let total = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = procStat(Number(name));
    if (!f) continue; // exited while we looked
    if (Number(name) === postmaster) total += (Number(f[UTIME]) + Number(f[STIME]) + Number(f[CUTIME]) + Number(f[CSTIME])) * TICK_MS;
    else if (Number(f[PPID]) === postmaster) total += (Number(f[UTIME]) + Number(f[STIME])) * TICK_MS;
  }
  return total;
}

/** utime + stime (ms) of another process, or 0 once it is gone. */
export function pidCpuMs(pid: number): number {
  const { user, system } = pidCpuSplitMs(pid);
  return user + system;
}

/** utime and stime (ms) of another process apart, or zeros once it is gone. */
export function pidCpuSplitMs(pid: number): { user: number; system: number } {
  const f = procStat(pid);
  return f ? { user: Number(f[UTIME]) * TICK_MS, system: Number(f[STIME]) * TICK_MS } : { user: 0, system: 0 };
}

/** /proc/PID/stat's fields after the command name (which may hold spaces), or undefined once the process is gone. */
export function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** A process's read and write system calls and voluntary context switches so far (/proc/PID/io, status): how often it woke and wrote. */
export function procWakes(pid: number): { reads: number; writes: number; voluntary: number } {
  const field = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { reads: field(io, /^syscr: (\d+)/m), writes: field(io, /^syscw: (\d+)/m), voluntary: field(readFileSync(`/proc/${pid}/status`, 'utf8'), /^voluntary_ctxt_switches:\s+(\d+)/m) };
}
