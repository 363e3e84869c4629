import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@tasksvc/runtime';

export interface LocalNats {
  url: string;
  port: number;
  storeDir: string;
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

async function waitPort(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ port, host: '127.0.0.1' }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nats-server did not listen on ${port}`);
}

/** A private nats-server with JetStream on a free port, for one test run. */
export async function startNats(opts: { port?: number; storeDir?: string } = {}): Promise<LocalNats> {
  const bin = natsBinary();
  const port = opts.port ?? (await freePort());
  const storeDir = opts.storeDir ?? mkdtempSync(join(tmpdir(), 'nats-test-'));
  let child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' });
  await waitPort(port, 10_000);
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
    stop,
    async restart() {
      await stop();
      child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' });
      await waitPort(port, 10_000);
    },
  };
}
