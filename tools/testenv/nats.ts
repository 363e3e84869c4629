import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@tasksvc/runtime';
import { NATS_CONFIG_PASSWORD, quotedForNatsConfig, type NatsServerConfigOptions } from '../../operator/src/desired.ts';
import { waitForPort } from './wait.ts';

export interface LocalNats {
  url: string;
  port: number;
  storeDir: string;
  /** the server process's id (a new one after restart) */
  pid(): number | undefined;
  stop(): Promise<void>;
  /** stop and start again on the same port and store (JetStream data survives) */
  restart(): Promise<void>;
}

function natsBinary(): string {
  for (const p of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) if (existsSync(p)) return p;
  try {
    return execFileSync('which', ['nats-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('nats-server is not installed: apt-get install -y nats-server (the tests run their own instance)');
  }
}


/** One nats-server process that can be stopped, killed and started again with the same arguments. */
function serverProcess(bin: string, args: string[], port: number, env?: NodeJS.ProcessEnv) {
  let child: ChildProcess | undefined;
  const start = async () => {
    const c = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(env ? { env: { ...process.env, ...env } } : {}) });
    child = c;
    // the server's last words, named when it does not come up (a port taken, a bad configuration)
    let stderr = '';
    c.stderr.on('data', (b: Buffer) => void (stderr = (stderr + b.toString()).slice(-2_000)));
    const exited = new Promise<never>((_, reject) => c.once('exit', (code, sig) => reject(new Error(`exited (${code ?? sig})`))));
    // a server that exits fails at once; one that is slow to listen on a loaded machine is waited for
    await Promise.race([waitForPort(port), exited]).catch((err: unknown) => {
      throw new Error(`nats-server ${args.join(' ')} did not come up: ${(err as Error).message}: ${stderr}`, { cause: err });
    });
  };
  const signal = async (sig: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(sig);
    await exited;
  };
  return { start, stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL'), pid: () => child?.pid };
}

/** A private nats-server with JetStream on a free port, for one test run. */
export async function startNats(opts: { port?: number; storeDir?: string; /** extra server flags, e.g. --user/--pass, --auth, --tls… */ args?: string[] } = {}): Promise<LocalNats> {
  const port = opts.port ?? (await freePort());
  const storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'nats-test-'));
  const server = serverProcess(natsBinary(), ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir, ...(opts.args ?? [])], port);
  await server.start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    pid: server.pid,
    stop: server.stop,
    async restart() {
      await server.stop();
      await server.start();
    },
  };
}

/** What a cluster's configuration file is rendered from: the operator's natsServerConfig options, on a loopback host. */
export type NatsClusterConfigOptions = NatsServerConfigOptions & { host: string };

export interface LocalNatsClusterServer {
  name: string;
  port: number;
  /** the server's monitoring endpoint (http_port), e.g. `${monitorUrl}/jsz` */
  monitorUrl: string;
  pid(): number | undefined;
  /** SIGKILL: no shutdown, no flush */
  kill(): Promise<void>;
  /** start again with the same configuration and store */
  start(): Promise<void>;
}

export interface LocalNatsCluster {
  /** every server's client URL, comma-separated (as NATS_URL takes them) */
  url: string;
  user: string;
  password: string;
  servers: LocalNatsClusterServer[];
  stop(): Promise<void>;
}

/**
 * A JetStream cluster of `size` nats-servers on loopback, configured by `render` (a configuration file
 * that reads NATS_SERVER_NAME, NATS_USER, NATS_CONFIG_PASSWORD and NATS_ROUTE_<i> from its environment, as
 * the operator's does), clients and routes authenticated by one user and password.
 */
export async function startNatsCluster(opts: { size?: number; render: (o: NatsClusterConfigOptions) => string }): Promise<LocalNatsCluster> {
  const bin = natsBinary();
  const size = opts.size ?? 3;
  const user = 'tasksvc';
  // a digit, a dash: nats-server's configuration parser reads such a value as a date unless the
  // configuration quotes it (as some of the operator's random base64url passwords begin)
  const password = `12-${randomBytes(24).toString('base64url')}`;
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), cluster: await freePort(), monitor: await freePort() })));
  const routes = Object.fromEntries(ports.map((p, i) => [`NATS_ROUTE_${i}`, `nats://${user}:${password}@127.0.0.1:${p.cluster}`]));
  const servers = ports.map((p, i) => {
    const dir = mkdtempSync(join(tmpdir(), `nats-cluster-${i}-`));
    const conf = join(dir, 'nats.conf');
    writeFileSync(
      conf,
      opts.render({ host: '127.0.0.1', clientPort: p.client, monitorPort: p.monitor, clusterPort: p.cluster, clusterName: 'test-cluster', servers: size, storeDir: join(dir, 'store') }),
    );
    const name = `nats-${i}`;
    const proc = serverProcess(bin, ['-c', conf], p.client, { NATS_SERVER_NAME: name, NATS_USER: user, NATS_PASSWORD: password, [NATS_CONFIG_PASSWORD]: quotedForNatsConfig(password), ...routes });
    return { name, port: p.client, monitorUrl: `http://127.0.0.1:${p.monitor}`, pid: proc.pid, kill: proc.kill, start: proc.start, stop: proc.stop };
  });
  await Promise.all(servers.map((s) => s.start()));
  return {
    url: ports.map((p) => `nats://127.0.0.1:${p.client}`).join(','),
    user,
    password,
    servers: servers.map(({ stop: _stop, ...s }) => s),
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}
