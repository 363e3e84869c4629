import { randomInt } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A TCP port for a server that must know its port before it listens (a URL in its configuration,
 * a child process given `--port`). The port is free when returned and stays free until used:
 *
 * - It lies below the kernel's ephemeral range. A port from `listen(0)` comes from that range, and so
 *   does the local port of every outgoing connection, so in the seconds before the server listens
 *   any connection to PostgreSQL or NATS could take it (a CI run failed on EADDRINUSE that way).
 * - It is claimed for this process in a shared directory, so concurrent processes (test workers,
 *   two runs on one machine) never hand out the same one; a claim whose process is gone is taken over.
 */
export async function freePort(): Promise<number> {
  const [low, high] = handedOutRange();
  for (let tries = 0; tries < 500; tries++) {
    const port = randomInt(low, high + 1);
    if (claimPort(port) && (await canListen(port))) return port;
  }
  throw new Error(`no free TCP port found in ${low}-${high}`);
}

/** 10000–29999, ending below the ephemeral range (and below Kubernetes' NodePorts, 30000–32767). */
function handedOutRange(): [number, number] {
  let ephemeralLow = 32768;
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // not Linux: keep the usual default
  }
  const high = Math.min(29_999, ephemeralLow - 1);
  if (high - 10_000 < 1_000) throw new Error(`the ephemeral port range starts at ${ephemeralLow}: no room below it for fixed ports`);
  return [10_000, high];
}

const CLAIMS = join(tmpdir(), 'tasksvc-ports');

/** Claim `port` for this process; false while another live process holds it. */
export function claimPort(port: number): boolean {
  mkdirSync(CLAIMS, { recursive: true, mode: 0o1777 });
  const file = join(CLAIMS, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch {
    // claimed before: take it over only when that process has ended
    if (alive(Number(readFileSync(file, 'utf8')))) return false;
    writeFileSync(file, String(process.pid));
    return true;
  }
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
