/** CPU time of the bench's own process and of its local PostgreSQL, for per-operation CPU figures (steadier than rates on a shared machine). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

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
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // USER_HZ is 100; fields 14–17 of stat: utime, stime, cutime, cstime
      if (Number(name) === postmaster) total += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
      else if (Number(f[1]) === postmaster) total += (Number(f[11]) + Number(f[12])) * 10;
    } catch {
      // exited while we looked
    }
  }
  return total;
}

/** utime + stime (ms) of another process, or 0 once it is gone. */
export function pidCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // USER_HZ is 100
  } catch {
    return 0;
  }
}
