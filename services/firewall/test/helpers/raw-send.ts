// Crafted packets over raw sockets (koffi -> libc), for rate-limit tests from the peer namespace.
//   node raw-send.ts icmp <dst> <type> <code> <count> <interval_ms>
//     -> {"sent":N,"sendMs":T}. ICMP (IPv4) or ICMPv6 (by the address) of any type; the kernel fills in
//        the ICMPv6 checksum. What arrives is counted on the receiving side (/proc/net/snmp, snmp6).
//   node raw-send.ts syn <src> <dst> <port> <count> <interval_us>
//     -> {"sent":N,"sendMs":T,"sentFirstSecond":S,"answeredFirstSecond":A,"answered":B}: TCP SYNs from
//        <src> (an address of this namespace) with distinct source ports; a SYN-ACK proves its SYN passed
//        the firewall, so A is exactly what a source got through in its first second.
import koffi from 'koffi';
import { isIPv6 } from 'node:net';
import { v6ToBigInt } from '../../src/net.ts';

const libc = koffi.load('libc.so.6');
const socket = libc.func('int socket(int, int, int)');
const bind = libc.func('int bind(int, const void *, uint32_t)');
const sendto = libc.func('long sendto(int, const void *, size_t, int, const void *, uint32_t)');
const recvfrom = libc.func('long recvfrom(int, void *, size_t, int, void *, void *)');
const close = libc.func('int close(int)');
const MSG_DONTWAIT = 0x40;

function sockaddr(addr: string, port = 0): Buffer {
  if (isIPv6(addr)) {
    const sa = Buffer.alloc(28);
    sa.writeUInt16LE(10, 0);
    sa.writeUInt16BE(port, 2);
    const n = v6ToBigInt(addr);
    for (let i = 0; i < 16; i++) sa[8 + i] = Number((n >> BigInt((15 - i) * 8)) & 0xffn);
    return sa;
  }
  const sa = Buffer.alloc(16);
  sa.writeUInt16LE(2, 0);
  sa.writeUInt16BE(port, 2);
  addr.split('.').forEach((o, i) => (sa[4 + i] = Number(o)));
  return sa;
}

function checksum(b: Buffer): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 2) sum += (b[i]! << 8) + (b[i + 1] ?? 0);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return ~sum & 0xffff;
}

const v4bytes = (a: string) => Buffer.from(a.split('.').map(Number));
const sleepMs = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
/** Busy-wait until `t` (ns of hrtime): sub-millisecond spacing without timers. */
const until = (t: bigint) => {
  while (process.hrtime.bigint() < t);
};

const [mode, ...args] = process.argv.slice(2);

if (mode === 'icmp') {
  const [dst = '', type = '0', code = '0', count = '1', interval = '1'] = args;
  const v6 = isIPv6(dst);
  const fd = socket(v6 ? 10 : 2, 3 /* SOCK_RAW */, v6 ? 58 : 1) as number;
  if (fd < 0) throw new Error('raw socket failed (root needed)');
  const sa = sockaddr(dst);
  // 4 bytes of "unused"/MTU field, then 28 bytes standing in for the offending packet's headers.
  const pkt = Buffer.alloc(8 + 28);
  pkt[0] = Number(type);
  pkt[1] = Number(code);
  if (Number(type) === 2 && v6) pkt.writeUInt32BE(1280, 4);
  if (!v6) pkt.writeUInt16BE(checksum(pkt), 2);
  const started = Date.now();
  for (let i = 0; i < Number(count); i++) {
    sendto(fd, pkt, pkt.length, 0, sa, sa.length);
    if (i < Number(count) - 1) sleepMs(Number(interval));
  }
  close(fd);
  console.log(JSON.stringify({ sent: Number(count), sendMs: Date.now() - started }));
} else if (mode === 'syn') {
  const [src = '', dst = '', portArg = '80', countArg = '1', intervalArg = '1000'] = args;
  const [port, count, intervalNs] = [Number(portArg), Number(countArg), BigInt(intervalArg) * 1000n];
  const fd = socket(2, 3, 6 /* IPPROTO_TCP */) as number;
  if (fd < 0) throw new Error('raw socket failed (root needed)');
  const local = sockaddr(src);
  if ((bind(fd, local, local.length) as number) !== 0) throw new Error(`cannot bind ${src}`);
  const sa = sockaddr(dst);
  const base = 20000 + (process.pid % 20000);
  const sentAt = new Map<number, bigint>();
  const answered = new Map<number, bigint>();
  const rbuf = Buffer.alloc(65536);
  const drain = () => {
    for (;;) {
      const n = recvfrom(fd, rbuf, rbuf.length, MSG_DONTWAIT, null, null) as number;
      if (n <= 0) return;
      const ihl = (rbuf[0]! & 0x0f) * 4;
      const from = `${rbuf[12]}.${rbuf[13]}.${rbuf[14]}.${rbuf[15]}`;
      const sport = rbuf.readUInt16BE(ihl);
      const dport = rbuf.readUInt16BE(ihl + 2);
      const flags = rbuf[ihl + 13]! & 0x3f;
      if (from === dst && sport === port && flags === 0x12 && sentAt.has(dport)) answered.set(dport, sentAt.get(dport)!);
    }
  };
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) {
    until(t0 + BigInt(i) * intervalNs);
    const sport = base + i;
    const tcp = Buffer.alloc(20);
    tcp.writeUInt16BE(sport, 0);
    tcp.writeUInt16BE(port, 2);
    tcp.writeUInt32BE(0x1000 + i, 4);
    tcp[12] = 5 << 4;
    tcp[13] = 0x02; // SYN
    tcp.writeUInt16BE(64240, 14);
    const pseudo = Buffer.concat([v4bytes(src), v4bytes(dst), Buffer.from([0, 6, 0, 20]), tcp]);
    tcp.writeUInt16BE(checksum(pseudo), 16);
    sentAt.set(sport, process.hrtime.bigint());
    sendto(fd, tcp, tcp.length, 0, sa, sa.length);
    drain();
  }
  const sendMs = Number((process.hrtime.bigint() - t0) / 1_000_000n);
  const end = Date.now() + 1000;
  while (Date.now() < end) {
    drain();
    sleepMs(10);
  }
  close(fd);
  const second = t0 + 1_000_000_000n;
  const inFirst = (t: bigint) => t < second;
  console.log(
    JSON.stringify({
      sent: count,
      sendMs,
      sentFirstSecond: [...sentAt.values()].filter(inFirst).length,
      answeredFirstSecond: [...answered.values()].filter(inFirst).length,
      answered: answered.size,
    }),
  );
} else {
  throw new Error('usage: raw-send.ts icmp <dst> <type> <code> <count> <interval_ms> | syn <src> <dst> <port> <count> <interval_us>');
}
