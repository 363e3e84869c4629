// systemd notification protocol (sd_notify) without libsystemd: one datagram to $NOTIFY_SOCKET. Node
// has no Unix datagram sockets, so the three libc calls go through koffi (already used for libnftables).
import koffi from 'koffi';

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;

let libc: { socket: (d: number, t: number, p: number) => number; sendto: (...a: unknown[]) => number; close: (fd: number) => number } | undefined;

/** `struct sockaddr_un` for a path, or an abstract address (`@name`). */
export function unixAddress(path: string): Buffer {
  const name = Buffer.from(path.startsWith('@') ? `\0${path.slice(1)}` : path);
  if (name.length > 107) throw new Error(`NOTIFY_SOCKET path too long: ${path}`);
  const abstract = path.startsWith('@');
  const sa = Buffer.alloc(2 + name.length + (abstract ? 0 : 1));
  sa.writeUInt16LE(AF_UNIX, 0);
  name.copy(sa, 2);
  return sa;
}

/**
 * Send `fields` (e.g. `{ READY: '1', STATUS: '…' }`) to systemd; a no-op outside a `Type=notify`
 * unit. Returns whether a message was sent. Never throws: a lost status line must not stop the firewall.
 */
export function sdNotify(fields: Record<string, string>, socketPath = process.env.NOTIFY_SOCKET): boolean {
  if (!socketPath) return false;
  try {
    if (!libc) {
      const so = koffi.load('libc.so.6');
      libc = {
        socket: so.func('int socket(int, int, int)') as never,
        sendto: so.func('long sendto(int, const void *, size_t, int, const void *, uint32_t)') as never,
        close: so.func('int close(int)') as never,
      };
    }
    const msg = Buffer.from(Object.entries(fields).map(([k, v]) => `${k}=${v.replace(/\n/g, ' ')}`).join('\n'));
    const sa = unixAddress(socketPath);
    const fd = libc.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    try {
      return libc.sendto(fd, msg, msg.length, 0, sa, sa.length) === msg.length;
    } finally {
      libc.close(fd);
    }
  } catch {
    return false;
  }
}
