import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { deferredRequires } from './bundle.ts';

const root = new URL('../..', import.meta.url).pathname;
const runtimeDir = join(root, 'services/runtime/src');
const dir = mkdtempSync(join(tmpdir(), 'bundle-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// the unbundled nkeys, to make a seed and check a signature made by the bundle
const fromRuntime = createRequire(join(runtimeDir, 'index.ts'));
const fromCore = createRequire(createRequire(fromRuntime.resolve('@nats-io/transport-node')).resolve('@nats-io/nats-core'));
interface KeyPair {
  getSeed(): Uint8Array;
  getPublicKey(): string;
  verify(input: Uint8Array, sig: Uint8Array): boolean;
}
const nkeys = fromCore('@nats-io/nkeys') as { createUser(): KeyPair; fromPublic(key: string): KeyPair; decode(text: string): Uint8Array };

/** Records in globalThis.__evaluated when the deferred modules' code runs. */
const marker: Plugin = {
  name: 'marker',
  setup(b) {
    b.onLoad({ filter: /[\\/](tweetnacl[\\/]nacl-fast\.js|@opentelemetry[\\/]api[\\/]dist[\\/]index\.cjs)$/ }, async (args) => {
      const { readFile } = await import('node:fs/promises');
      const name = args.path.includes('tweetnacl') ? 'tweetnacl' : '@opentelemetry/api';
      return { contents: `(globalThis.__evaluated ??= []).push(${JSON.stringify(name)});\n${await readFile(args.path, 'utf8')}`, loader: 'js' };
    });
  },
};

// What a service does at start (collect prom-client's default metrics, connect with the NATS client's
// authenticators at hand), then the paths that need the deferred modules: exemplars, an nkey signature.
const entry = `
import { nkeyAuthenticator } from '@nats-io/transport-node';
import client from 'prom-client';
const evaluated = () => [...(globalThis.__evaluated ?? [])];
const out = { atStart: evaluated() };
const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });
out.metrics = (await registry.metrics()).includes('process_cpu_user_seconds_total');
out.afterMetrics = evaluated();
const open = new client.Registry(client.Registry.OPENMETRICS_CONTENT_TYPE);
client.collectDefaultMetrics({ register: open, enableExemplars: true });
out.exemplars = (await open.metrics()).includes('process_cpu_user_seconds_total');
out.afterExemplars = evaluated();
const auth = nkeyAuthenticator(new TextEncoder().encode(process.argv[2]))(process.argv[3]);
out.nkey = auth.nkey;
out.sig = auth.sig;
out.afterSign = evaluated();
console.log(JSON.stringify(out));
`;

async function bundled(name: string, plugins: Plugin[]): Promise<string> {
  await build({
    stdin: { contents: entry, resolveDir: runtimeDir, sourcefile: 'entry.mjs', loader: 'js' },
    outfile: join(dir, `${name}.mjs`),
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    plugins: [...plugins, marker],
    logLevel: 'error',
  });
  return join(dir, `${name}.mjs`);
}

function run(file: string, seed: string, nonce: string) {
  return JSON.parse(execFileSync(process.execPath, [file, seed, nonce], { encoding: 'utf8' })) as {
    atStart: string[];
    metrics: boolean;
    afterMetrics: string[];
    exemplars: boolean;
    afterExemplars: string[];
    nkey: string;
    sig: string;
    afterSign: string[];
  };
}

describe('deferredRequires (bundles)', () => {
  it('evaluates nkeys/tweetnacl and the OpenTelemetry API on first use, which still works', async () => {
    const user = nkeys.createUser();
    const seed = new TextDecoder().decode(user.getSeed());
    const nonce = 'a-server-nonce-4711';
    const withPlugin = run(await bundled('deferred', [deferredRequires]), seed, nonce);
    expect(withPlugin.atStart).toEqual([]);
    expect(withPlugin.metrics).toBe(true);
    expect(withPlugin.afterMetrics).toEqual([]);
    expect(withPlugin.exemplars).toBe(true);
    expect(withPlugin.afterExemplars).toEqual(['@opentelemetry/api']);
    expect(withPlugin.afterSign).toEqual(['@opentelemetry/api', 'tweetnacl']);
    expect(withPlugin.nkey).toBe(user.getPublicKey());
    expect(nkeys.fromPublic(withPlugin.nkey).verify(new TextEncoder().encode(nonce), nkeys.decode(withPlugin.sig))).toBe(true);

    // the marker sees both evaluated at the import without the plugin
    const without = run(await bundled('plain', []), seed, nonce);
    expect([...without.atStart].sort()).toEqual(['@opentelemetry/api', 'tweetnacl']);
    expect(without.sig).toBe(withPlugin.sig);
  });
});

describe('what each service bundle loads at start', () => {
  it('holds none of the libraries the service must not load at start in main.mjs or the chunks it imports statically', async () => {
    const { bundleProcesses } = await import('./bundle.ts');
    const { heavyAtStart, notAtStart, TASKS_FILE_FORMATS } = await import('../testenv/start-imports.ts');
    const services = ['auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'gateway'] as const;
    const built = await bundleProcesses(root, join(dir, 'services'), [...services]);
    for (const s of services) {
      const atStart = built.get(s)!.atStart;
      // the walk found the service's own code (not an empty list passing by itself)
      expect(atStart.some((f) => f.endsWith(`/services/${s}/src/service.ts`))).toBe(true);
      const never = s === 'tasks' ? [...notAtStart(s), ...TASKS_FILE_FORMATS] : notAtStart(s);
      expect({ [s]: heavyAtStart(atStart, never) }).toEqual({ [s]: [] });
    }
  }, 120_000);
});
