// Stands in for systemd's notification socket: binds a Unix datagram socket at the given path and
// prints every message it receives as one JSON line ({"READY":"1","STATUS":"…"}). Node has no Unix
// datagram sockets, hence libc through koffi.  Usage: node notify-listen.ts <path>
import koffi from 'koffi';
import { unixAddress } from '../../src/notify.ts';

const [path = ''] = process.argv.slice(2);
const libc = koffi.load('libc.so.6');
const socket = libc.func('int socket(int, int, int)');
const bind = libc.func('int bind(int, const void *, uint32_t)');
const recv = libc.func('long recv(int, void *, size_t, int)');
const fd = socket(1, 2, 0) as number;
const sa = unixAddress(path);
if ((bind(fd, sa, sa.length) as number) !== 0) throw new Error(`cannot bind ${path}`);
const buf = Buffer.alloc(65536);
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
process.stdout.write('listening\n');
for (;;) {
  const n = recv(fd, buf, buf.length, 0x40 /* MSG_DONTWAIT */) as number;
  if (n <= 0) {
    sleep(20);
    continue;
  }
  const fields = Object.fromEntries(buf.subarray(0, n).toString().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  process.stdout.write(`${JSON.stringify(fields)}\n`);
}
