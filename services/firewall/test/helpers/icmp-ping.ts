// Minimal ping over a raw socket (koffi -> libc), because CI images have no iputils-ping.
// Usage (as root, inside a namespace): node icmp-ping.ts <addr> <count> <interval_ms> [payload_bytes]
// Prints {"sent":N,"received":M,"sendMs":T} (T: time spent sending, for rate-limit bounds). The kernel fragments payloads above the MTU, like ping -s.
import koffi from 'koffi';
import { isIPv6 } from 'node:net';
import { v6ToBigInt } from '../../src/net.ts';

const [addr = '', countArg = '5', intervalArg = '200', sizeArg = '56'] = process.argv.slice(2);
const count = Number(countArg);
const interval = Number(intervalArg);
const size = Number(sizeArg);
const v6 = isIPv6(addr);

const libc = koffi.load('libc.so.6');
const socket = libc.func('int socket(int, int, int)');
const sendto = libc.func('long sendto(int, const void *, size_t, int, const void *, uint32_t)');
const recvfrom = libc.func('long recvfrom(int, void *, size_t, int, void *, void *)');
const close = libc.func('int close(int)');

const fd = socket(v6 ? 10 : 2, 3 /* SOCK_RAW */, v6 ? 58 : 1) as number;
if (fd < 0) throw new Error('raw socket failed (root needed)');

const sa = Buffer.alloc(v6 ? 28 : 16);
sa.writeUInt16LE(v6 ? 10 : 2, 0);
if (v6) {
  const n = v6ToBigInt(addr);
  for (let i = 0; i < 16; i++) sa[8 + i] = Number((n >> BigInt((15 - i) * 8)) & 0xffn);
} else {
  addr.split('.').forEach((o, i) => (sa[4 + i] = Number(o)));
}

function checksum(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) + (b[i + 1] ?? 0);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return ~sum & 0xffff;
}

const ident = process.pid & 0xffff;
const seen = new Set<number>();
const rbuf = Buffer.alloc(65536);

function drain(flags: number): boolean {
  const n = recvfrom(fd, rbuf, rbuf.length, flags, null, null) as number;
  if (n <= 0) return false;
  // IPv4 raw sockets deliver the IP header; ICMPv6 raw sockets do not.
  const off = v6 ? 0 : (rbuf[0]! & 0x0f) * 4;
  const type = rbuf[off]!;
  if (type === (v6 ? 129 : 0) && rbuf.readUInt16BE(off + 4) === ident) seen.add(rbuf.readUInt16BE(off + 6));
  return true;
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const MSG_DONTWAIT = 0x40;
const started = Date.now();
for (let seq = 0; seq < count; seq++) {
  const pkt = Buffer.alloc(8 + size, 0x61);
  pkt[0] = v6 ? 128 : 8;
  pkt[1] = 0;
  pkt.writeUInt16BE(0, 2);
  pkt.writeUInt16BE(ident, 4);
  pkt.writeUInt16BE(seq, 6);
  if (!v6) pkt.writeUInt16BE(checksum(pkt), 2);
  sendto(fd, pkt, pkt.length, 0, sa, sa.length);
  while (drain(MSG_DONTWAIT));
  if (seq < count - 1) sleep(interval);
}
const sendMs = Date.now() - started;
// Late replies: keep draining for a second.
const end = Date.now() + 1000;
while (Date.now() < end) {
  if (!drain(MSG_DONTWAIT)) sleep(20);
}
close(fd);
console.log(JSON.stringify({ sent: count, received: seen.size, sendMs }));
