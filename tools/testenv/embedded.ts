import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '@tasksvc/runtime';
import { until } from './wait.ts';

const root = new URL('../..', import.meta.url).pathname;
const node = join(root, 'node_modules', '.bin', 'node');

export interface EmbeddedProcess {
  url: string;
  /** the last 20 kB of its stdout and stderr */
  output(): string;
  /** SIGTERM, and wait for the exit (a clean stop flushes what it buffered, e.g. spans) */
  stop(): Promise<void>;
}

/**
 * `npm start` (tools/start.ts) as a child process on a free port, the way a self-hoster runs it:
 * one process, the in-process bus. Resolves once GET /api/health answers 200.
 */
export async function startEmbedded(env: Record<string, string>): Promise<EmbeddedProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(node, [join(root, 'tools', 'start.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', RUNTIME_ENV: 'test', DISABLE_UPDATE_CHECK: 'true', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const append = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}`);
        return (await fetch(`${url}/api/health`).catch(() => undefined))?.status === 200;
      },
      'npm start to be up',
      120_000,
    );
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${output}`, { cause: err });
  }
  return { url, output: () => output, stop };
}
