import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@tasksvc/runtime';
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


/** A private nats-server with JetStream on a free port, for one test run. */
export async function startNats(opts: { port?: number; storeDir?: string; /** extra server flags, e.g. --user/--pass, --auth, --tls… */ args?: string[] } = {}): Promise<LocalNats> {
  const bin = natsBinary();
  const port = opts.port ?? (await freePort());
  const storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'nats-test-'));
  let child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir, ...(opts.args ?? [])], { stdio: 'ignore' });
  await waitForPort(port, 10_000);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    pid: () => child.pid,
    stop,
    async restart() {
      await stop();
      child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir, ...(opts.args ?? [])], { stdio: 'ignore' });
      await waitForPort(port, 10_000);
    },
  };
}
