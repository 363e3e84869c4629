import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@tasksvc/runtime';
import { until } from './wait.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface GatewayProcess {
  base: string;
  port: number;
  /** throws, with the gateway's stderr, once the process has exited */
  alive(): void;
  /** SIGTERM, resolved once it exited */
  stop(): Promise<void>;
}

/**
 * The gateway as the image runs it: its own process on loopback, configured only by environment
 * variables (`env` adds to or replaces the defaults). Returns at once; it may still be waiting for its
 * database or bus (startGatewayProcess waits for it to be ready).
 */
export async function spawnGatewayProcess(o: { databaseUrl: string; natsUrl: string; env?: Record<string, string> }): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(`${ROOT}node_modules/.bin/node`, ['services/gateway/src/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: o.databaseUrl,
      AUTH_SECRET: 'gateway-process-test-secret-gateway-process',
      AUTH_TRUST_HOST: 'true',
      NATS_URL: o.natsUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DISABLE_UPDATE_CHECK: 'true',
      ...o.env,
    },
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    alive() {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the gateway exited with ${child.exitCode ?? child.signalCode}:\n${stderr}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** spawnGatewayProcess, resolved once `readyPath` answers 200; a gateway that exits first fails with its stderr. */
export async function startGatewayProcess(o: { databaseUrl: string; natsUrl: string; env?: Record<string, string>; readyPath?: string }): Promise<GatewayProcess> {
  const gateway = await spawnGatewayProcess(o);
  try {
    await until(async () => {
      gateway.alive();
      return fetch(`${gateway.base}${o.readyPath ?? '/readyz'}`).then((r) => r.status === 200, () => false);
    }, 'the gateway process ready', 90_000);
  } catch (err) {
    await gateway.stop();
    throw err;
  }
  return gateway;
}
