/**
 * The Dockerfile's contract, read without a container engine (fast, runs everywhere): one target per
 * component, Node 24 base, user 1001, gateway port/healthcheck, build args, and entry points that exist
 * in the repository (each service's through the bundle the image builds from it). images.test.ts runs the images build-images.sh built from it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDockerfile, type Instruction, type Stage } from './dockerfile.ts';
import { STANDALONE_ENV, STANDALONE_NODE_FLAGS } from '@tasksvc/runtime';
import { BUNDLE_ENTRIES } from '../build/bundle.ts';
import { REPO } from './paths.ts';

const SERVICES = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'];
const TARGETS = [...SERVICES, 'firewall', 'operator'];
const text = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
const { globalArgs, stages } = parseDockerfile(text);
const byName = new Map(stages.map((s) => [s.name, s]));

/** A stage's instructions including those inherited from the stages it is built FROM. */
function chain(name: string): Instruction[] {
  const s = byName.get(name);
  if (!s) throw new Error(`no stage ${name}`);
  return [...(byName.has(s.from) ? chain(s.from) : []), ...s.body];
}
const last = (ins: Instruction[], op: string) => ins.filter((i) => i.op === op).at(-1);
const execForm = (args: string): string[] => JSON.parse(args) as string[];

describe('Dockerfile', () => {
  it('has exactly one target per component', () => {
    for (const t of TARGETS) expect(byName.has(t), `target ${t}`).toBe(true);
  });

  it('builds on node:24-bookworm-slim', () => {
    expect(globalArgs.find((a) => a.args.startsWith('NODE_IMAGE='))?.args).toBe('NODE_IMAGE=node:24-bookworm-slim');
    // every stage's root image is that base
    const root = (name: string): string => {
      const s = byName.get(name) as Stage;
      return byName.has(s.from) ? root(s.from) : s.from;
    };
    for (const s of stages) expect(root(s.name)).toBe('${NODE_IMAGE}');
  });

  it.each(TARGETS)('%s runs as user 1001 and starts an entry point that exists', (t) => {
    const ins = chain(t);
    expect(last(ins, 'USER')?.args).toBe('1001');
    const cmd = execForm(last(ins, 'CMD')?.args ?? '[]');
    expect(cmd[0]).toBe('node');
    const entry = cmd.find((a, i) => i > 0 && !a.startsWith('--')) as string;
    if (t === 'firewall' || t === 'operator') expect(existsSync(join(REPO, entry)), `${entry} exists`).toBe(true);
    if (t === 'firewall') expect(cmd.slice(1)).toEqual(['services/firewall/src/cli.ts', 'core', '--config', '/etc/task-firewall/config.json']);
    else if (t === 'operator') expect(cmd).toEqual(['node', 'operator/src/main.ts']);
    // a service alone starts its bundle with the runtime's node flags (runtime/gc-tuning.ts), as in the test cluster
    else expect(cmd).toEqual(['node', ...STANDALONE_NODE_FLAGS, `bundle/${t}/main.mjs`]);
  });

  it.each(SERVICES)('%s: the image gets its own bundle, built by the bundle stage from the service entry point', (t) => {
    // the bundle stage builds every service with tools/build/bundle.ts into /app/bundle/<name>/main.mjs
    const run = chain('bundle').filter((i) => i.op === 'RUN').map((i) => i.args);
    const build = run.find((r) => r.startsWith('node tools/build/bundle.ts')) ?? '';
    expect(build.split(/\s+/)).toEqual(expect.arrayContaining(['/app/bundle', t]));
    expect(BUNDLE_ENTRIES[t]?.main).toBe(`services/${t}/src/main.ts`);
    expect(existsSync(join(REPO, BUNDLE_ENTRIES[t]?.main ?? '')), 'entry point exists').toBe(true);
    // …and the target copies exactly its own bundle to where its CMD runs it (WORKDIR /app)
    const copies = chain(t).filter((i) => i.op === 'COPY' && i.args.includes('--from=bundle')).map((i) => i.args);
    expect(copies).toEqual([`--from=bundle /app/bundle/${t} /app/bundle/${t}`]);
    expect(last(chain(t), 'WORKDIR')?.args).toBe('/app');
    // the bundle's paths to migrations, ui/dist and package.json are the sources' paths at build time: the
    // build stage and the runtime hold the sources at the same place (/app)
    expect(last(chain('bundle'), 'WORKDIR')?.args).toBe('/app');
    expect(chain('runtime').some((i) => i.op === 'COPY' && i.args === '. .')).toBe(true);
  });

  it('every service runs with STANDALONE_ENV in its environment (gc-tuning.ts)', () => {
    for (const t of SERVICES) {
      const env = chain(t).filter((i) => i.op === 'ENV').flatMap((i) => i.args.split(/\s+/));
      for (const [k, v] of Object.entries(STANDALONE_ENV)) expect(env, t).toContain(`${k}=${v}`);
    }
  });

  it('the runtime user 1001 is created in the image', () => {
    const run = chain('gateway').filter((i) => i.op === 'RUN').map((i) => i.args).join('\n');
    expect(run).toMatch(/useradd[^\n]*--uid 1001/);
  });

  it('gateway: EXPOSE 3000 and a health check every 30 s with a 30 s start period on /api/health', () => {
    const ins = chain('gateway');
    expect(ins.filter((i) => i.op === 'EXPOSE').map((i) => i.args)).toEqual(['3000']);
    const hc = last(ins, 'HEALTHCHECK')?.args ?? '';
    expect(hc).toMatch(/--interval=30s/);
    expect(hc).toMatch(/--start-period=30s/);
    // the port follows PORT like the server does, 3000 by default
    expect(hc).toContain("'http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health'");
    expect(chain('gateway').some((i) => i.op === 'COPY' && i.args.includes('--from=ui-build') && i.args.includes('ui/dist'))).toBe(true);
  });

  it('SERVICE_COMMIT and PUBLIC_APP_URL are build args; the commit reaches the environment, the URL the UI build', () => {
    const rt = chain('gateway');
    expect(rt.some((i) => i.op === 'ARG' && /^SERVICE_COMMIT(=|$)/.test(i.args))).toBe(true);
    expect(rt.some((i) => i.op === 'ENV' && /SERVICE_COMMIT=\$\{SERVICE_COMMIT\}/.test(i.args))).toBe(true);
    const ui = chain('ui-build');
    expect(ui.some((i) => i.op === 'ARG' && /^PUBLIC_APP_URL(=|$)/.test(i.args))).toBe(true);
    expect(ui.some((i) => i.op === 'ENV' && /PUBLIC_APP_URL=\$\{PUBLIC_APP_URL\}/.test(i.args))).toBe(true);
    expect(ui.some((i) => i.op === 'RUN' && i.args.includes('pnpm --filter @tasksvc/ui build'))).toBe(true);
  });

  it('the production install is pnpm --prod from the lock file, and the firewall image has libnftables1', () => {
    expect(chain('prod-deps').some((i) => i.op === 'RUN' && /pnpm install --frozen-lockfile --prod/.test(i.args))).toBe(true);
    expect(chain('firewall').some((i) => i.op === 'RUN' && /apt-get install[^&]*libnftables1/.test(i.args))).toBe(true);
  });

  it('every file the manifests stage copies exists', () => {
    for (const i of byName.get('manifests')?.body.filter((x) => x.op === 'COPY') ?? []) {
      const parts = i.args.split(/\s+/);
      for (const src of parts.slice(0, -1)) expect(existsSync(join(REPO, src)), src).toBe(true);
    }
  });

  it('.dockerignore keeps node_modules, git and local data out of the context', () => {
    const ignore = readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n');
    for (const p of ['**/node_modules', '.git', '.data', '**/dist']) expect(ignore).toContain(p);
  });
});
