/* eslint-disable @typescript-eslint/no-explicit-any -- nft -j output is untyped JSON inspected structurally */
// Network-namespace test bed: a firewall host namespace and a peer joined by a veth pair,
// the real core daemon running inside the host namespace, traffic generated from the peer.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request, type Reply } from '../../src/socket.ts';
import { TABLE } from '../../src/ruleset.ts';

export const NODE = fileURLToPath(new URL('../../../../node_modules/.bin/node', import.meta.url));
export const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const PING = fileURLToPath(new URL('./icmp-ping.ts', import.meta.url));

/** Why netns tests cannot run here, or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (CI runs as root)';
  for (const bin of ['ip', 'nft', 'hping3']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} missing: apt-get install nftables libnftables1 hping3 iproute2`;
  }
  if (!['/usr/lib/x86_64-linux-gnu/libnftables.so.1', '/usr/lib/aarch64-linux-gnu/libnftables.so.1', '/usr/lib/libnftables.so.1'].some(existsSync)) {
    return 'libnftables1 missing';
  }
  const probe = spawnSync('unshare', ['-n', 'true']);
  if (probe.status !== 0) return `cannot create network namespaces: ${probe.stderr.toString().trim()}`;
  return undefined;
}

export function sh(cmd: string[], opts: { allowFail?: boolean; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8', timeout: opts.timeoutMs ?? 60_000, maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${cmd.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout + (opts.allowFail ? r.stderr : '');
}

let seq = 0;

export interface Bed {
  host: string;
  peer: string;
  hostIp: string;
  peerIp: string;
  hostIp6: string;
  peerIp6: string;
  dir: string;
  inHost: (cmd: string[], opts?: { allowFail?: boolean; timeoutMs?: number }) => string;
  inPeer: (cmd: string[], opts?: { allowFail?: boolean; timeoutMs?: number }) => string;
  destroy: () => void;
}

/** Two namespaces joined by veth: host 10.99.0.1 / fd99::1, peer 10.99.0.2 / fd99::2. */
export function createBed(tag: string): Bed {
  const id = `${tag}${process.pid % 10000}${seq++}`;
  const host = `fwh${id}`;
  const peer = `fwp${id}`;
  sh(['ip', 'netns', 'add', host]);
  sh(['ip', 'netns', 'add', peer]);
  sh(['ip', 'link', 'add', 'vh', 'netns', host, 'type', 'veth', 'peer', 'name', 'vp', 'netns', peer]);
  for (const [ns, dev, v4, v6] of [
    [host, 'vh', '10.99.0.1/24', 'fd99::1/64'],
    [peer, 'vp', '10.99.0.2/24', 'fd99::2/64'],
  ] as const) {
    sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    sh(['ip', '-n', ns, 'addr', 'add', v4, 'dev', dev, 'broadcast', '10.99.0.255']);
    sh(['ip', '-n', ns, '-6', 'addr', 'add', v6, 'dev', dev, 'nodad']);
    sh(['ip', '-n', ns, 'link', 'set', dev, 'up']);
  }
  const dir = mkdtempSync(join(tmpdir(), `fwtest-${id}-`));
  return {
    host,
    peer,
    hostIp: '10.99.0.1',
    peerIp: '10.99.0.2',
    hostIp6: 'fd99::1',
    peerIp6: 'fd99::2',
    dir,
    inHost: (cmd, o) => sh(['ip', 'netns', 'exec', host, ...cmd], o),
    inPeer: (cmd, o) => sh(['ip', 'netns', 'exec', peer, ...cmd], o),
    destroy: () => {
      sh(['ip', 'netns', 'del', host], { allowFail: true });
      sh(['ip', 'netns', 'del', peer], { allowFail: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface CoreProc {
  socket: string;
  configFile: string;
  proc: ChildProcess;
  output: () => string;
  req: (type: string, payload?: unknown) => Promise<Reply>;
  /** SIGKILL, no cleanup: the kernel keeps whatever rules were loaded. */
  kill9: () => Promise<void>;
  stop: () => Promise<void>;
}

export function writeConfig(bed: Bed, extra: Record<string, unknown>): string {
  const file = join(bed.dir, 'config.json');
  writeFileSync(file, JSON.stringify({ socket_path: join(bed.dir, 'core.sock'), data_dir: join(bed.dir, 'data'), log_dir: join(bed.dir, 'log'), ...extra }, null, 2));
  return file;
}

export interface StartOptions {
  /** Confirm the first start's window (default true: most tests start from confirmed rules). */
  confirm?: boolean;
  env?: Record<string, string>;
  /** A directory the daemon sees read-only (its own mount namespace), as a Kubernetes ConfigMap mount is. */
  readOnlyDir?: string;
}

/** Start the real daemon (`cli.ts core`) inside the host namespace and wait for its socket. */
export async function startCore(bed: Bed, configFile: string, opts: StartOptions = {}): Promise<CoreProc> {
  const socket = join(bed.dir, 'core.sock');
  rmSync(socket, { force: true });
  const daemon = [NODE, CLI, 'core', '--config', configFile];
  // unshare and sh exec into node, so the pid (and a SIGKILL) is the daemon's.
  const command = opts.readOnlyDir ? ['unshare', '-m', 'sh', '-c', 'mount --bind -o ro "$0" "$0" && exec "$@"', opts.readOnlyDir, ...daemon] : daemon;
  const proc = spawn('ip', ['netns', 'exec', bed.host, ...command], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  // 'close', not 'exit': node may emit 'exit' before it has read the last of the daemon's output (its
  // "daemon stopped: …" line was missing once in CI), 'close' comes once the pipes are drained too
  const closed = new Promise<void>((r) => proc.once('close', () => r()));
  const req = (type: string, payload?: unknown) => request(socket, type, payload ?? {});
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`core exited early (${proc.exitCode}): ${out}`);
    try {
      if (existsSync(socket) && (await req('GET_STATUS')).success) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`core did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  if (opts.confirm !== false && ((await req('GET_STATUS')).data as { has_pending: boolean }).has_pending) {
    const r = await req('ACCEPT', { actor: 'test-setup' });
    if (!r.success) throw new Error(`could not confirm the first start: ${r.error}`);
  }
  return {
    socket,
    configFile,
    proc,
    output: () => out,
    req,
    kill9: async () => {
      proc.kill('SIGKILL');
      await closed;
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await closed;
    },
  };
}

/** Our table as nft JSON objects (via the nft CLI: an independent reader of the kernel state). */
export function tableJson(bed: Bed): Record<string, any>[] {
  const out = bed.inHost(['nft', '-j', 'list', 'table', 'inet', TABLE]);
  return (JSON.parse(out) as { nftables: Record<string, any>[] }).nftables;
}

export function tableText(bed: Bed): string {
  return bed.inHost(['nft', 'list', 'table', 'inet', TABLE], { allowFail: true });
}

/**
 * Our table's text without what traffic changes (counters, the elements meters add to dynamic sets):
 * the ruleset that must match byte for byte. Sets and chains are sorted by name: an in-place update
 * lists an object it recreated after the others, which changes nothing in how packets are filtered.
 */
export const rulesText = (bed: Bed) => {
  const text = tableText(bed)
    .replace(/counter packets \d+ bytes \d+/g, 'counter')
    .replace(/(flags dynamic[^\n]*\n(?:\t\t(?!elements)[^\n]*\n)*)\t\telements = \{[^}]*\}\n/g, '$1');
  const m = /^(table [^\n]*\{\n)([\s\S]*)(\n\}\n?)$/.exec(text);
  return m ? m[1]! + m[2]!.split('\n\n').sort().join('\n\n') + m[3]! : text;
};

export function rulesOf(bed: Bed, chain = 'input'): Record<string, any>[] {
  return tableJson(bed)
    .filter((o) => o.rule && o.rule.chain === chain)
    .map((o) => o.rule);
}

/** Packets counted by the first rule of `chain` whose JSON contains `needle`. */
export function counterOf(bed: Bed, needle: string, chain = 'input'): number {
  const rule = rulesOf(bed, chain).find((r) => JSON.stringify(r.expr).includes(needle));
  if (!rule) throw new Error(`no rule containing ${needle} in ${chain}`);
  const c = (rule.expr as any[]).find((e) => e.counter);
  return c ? Number(c.counter.packets) : 0;
}

export function ping(bed: Bed, target: string, count: number, intervalMs: number, size = 56): { sent: number; received: number; sendMs: number } {
  return JSON.parse(bed.inPeer([NODE, PING, target, String(count), String(intervalMs), String(size)])) as { sent: number; received: number; sendMs: number };
}

/** hping3 from the peer; returns the number of replies it saw. */
export function hping(bed: Bed, args: string[]): number {
  return hpingTimed(bed, args).received;
}

/** hping3 from the peer, with the wall time it took (bounds what a rate limit may let through). */
export function hpingTimed(bed: Bed, args: string[]): { received: number; seconds: number } {
  const t0 = Date.now();
  const out = bed.inPeer(['hping3', ...args], { allowFail: true });
  const m = /(\d+) packets received/.exec(out);
  return { received: m ? Number(m[1]) : 0, seconds: (Date.now() - t0) / 1000 };
}

/** Most packets a `limit rate over N/second burst B` meter can pass in `seconds` (+1 s of slack). */
export const meterAllows = (rate: number, burst: number, seconds: number) => Math.ceil(burst + rate * (seconds + 1));

/** Start TCP echo listeners on `ports` inside the host namespace (or `ns`), held open until stopped. */
export function listen(bed: Bed, ports: number[], ns = bed.host): { stop: () => void } {
  const code = `const net=require('node:net');for(const p of ${JSON.stringify(ports)}){net.createServer(s=>{s.on('error',()=>{});s.pipe(s)}).listen(p,'::')};setInterval(()=>{},1e6)`;
  const proc = spawn('ip', ['netns', 'exec', ns, NODE, '-e', code], { stdio: 'ignore' });
  waitListening(ns, ports);
  return { stop: () => proc.kill('SIGKILL') };
}

/** Block until every port has a TCP listener in the namespace (a loaded machine may take seconds to start one). */
function waitListening(ns: string, ports: number[], limitMs = 30_000): void {
  const end = Date.now() + limitMs;
  for (;;) {
    const listening = spawnSync('ip', ['netns', 'exec', ns, 'ss', '-Hltn'], { encoding: 'utf8' }).stdout ?? '';
    const missing = ports.filter((p) => !new RegExp(`:${p}\\s`).test(listening));
    if (missing.length === 0) return;
    if (Date.now() > end) throw new Error(`no listener on port(s) ${missing.join(', ')} in ${ns} after ${limitMs} ms`);
    spawnSync('sleep', ['0.05']);
  }
}

/**
 * A process named `sshd` echoing on `port` in the host namespace, one session at a time (perl, from Debian's essential
 * perl-base, under a symlink: node renames its main thread, so its process name would not be sshd).
 */
export function fakeSshd(bed: Bed, port: number): { stop: () => void } {
  const sshd = join(bed.dir, 'sshd');
  symlinkSync('/usr/bin/perl', sshd);
  const code = `use Socket qw(:DEFAULT IN6ADDR_ANY pack_sockaddr_in6); socket(S, PF_INET6, SOCK_STREAM, 0) or die; setsockopt(S, SOL_SOCKET, SO_REUSEADDR, 1); bind(S, pack_sockaddr_in6(${port}, IN6ADDR_ANY)) or die; listen(S, 16) or die; while (accept(C, S)) { while (sysread(C, my $b, 4096)) { syswrite(C, $b) } close C }`;
  const proc = spawn('ip', ['netns', 'exec', bed.host, sshd, '-e', code], { stdio: 'ignore' });
  waitListening(bed.host, [port]);
  return { stop: () => proc.kill('SIGKILL') };
}

/** A TCP session from the peer to host:port (an echo listener), kept open to probe whether it still carries data. */
export interface LiveSession {
  ready: Promise<void>;
  /** Send a token and report whether its echo came back within `limitMs` (a dropped path never answers). */
  roundTrip: (token: string, limitMs?: number) => Promise<boolean>;
  close: () => void;
}

export function liveSession(bed: Bed, host: string, port: number): LiveSession {
  const code = `const s=require('node:net').connect(${port},${JSON.stringify(host)});s.on('connect',()=>console.log('connected'));s.on('data',d=>process.stdout.write(d));s.on('error',e=>console.log('error '+e.code));process.stdin.on('data',d=>s.write(d))`;
  const proc = spawn('ip', ['netns', 'exec', bed.peer, NODE, '-e', code], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const waitFor = async (needle: string, limitMs: number) => {
    const end = Date.now() + limitMs;
    while (!out.includes(needle)) {
      if (Date.now() > end || proc.exitCode !== null) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
    return true;
  };
  return {
    ready: waitFor('connected', 10_000).then((ok) => {
      if (!ok) throw new Error(`session to ${host}:${port} did not connect: ${out}`);
    }),
    roundTrip: (token, limitMs = 3000) => {
      proc.stdin.write(`<${token}>\n`);
      return waitFor(`<${token}>`, limitMs);
    },
    close: () => proc.kill('SIGKILL'),
  };
}

/**
 * Open `n` concurrent TCP connections from the peer to host:port, hold them all, and report how many
 * completed the handshake within `timeoutMs`.
 */
export function concurrentConnects(bed: Bed, host: string, port: number, n: number, timeoutMs = 3000): number {
  const code = `const net=require('node:net');let ok=0,done=0;const socks=[];
for(let i=0;i<${n};i++){setTimeout(()=>{const s=net.connect({host:${JSON.stringify(host)},port:${port}});socks.push(s);
const t=setTimeout(()=>{s.destroy();fin()},${timeoutMs});s.on('connect',()=>{clearTimeout(t);ok++;fin()});s.on('error',()=>{clearTimeout(t);fin()})},i*50)}
function fin(){if(++done===${n}){console.log(ok);process.exit(0)}}`;
  return Number(bed.inPeer([NODE, '-e', code]).trim());
}

/**
 * Beds, daemons and helper processes of concurrent cases, all torn down by `cleanup` in afterAll
 * (a failed assertion skips a case's own cleanup: never leave a daemon or a namespace behind).
 */
export function testBeds() {
  const beds: Bed[] = [];
  const cores: CoreProc[] = [];
  const stops: (() => void)[] = [];
  const bed = (tag: string): Bed => {
    const b = createBed(tag);
    beds.push(b);
    return b;
  };
  const start = async (b: Bed, file: string, opts: StartOptions = {}): Promise<CoreProc> => {
    const core = await startCore(b, file, opts);
    cores.push(core);
    return core;
  };
  const cleanup = async (): Promise<void> => {
    for (const s of stops) s();
    for (const c of cores) await c.stop();
    for (const b of beds) b.destroy();
  };
  /** `stops` run first at cleanup. */
  return { bed, start, stops, cleanup };
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}
