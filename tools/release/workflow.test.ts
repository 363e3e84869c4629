import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKFLOW_TEXT = readFileSync(join(ROOT, '.github/workflows/release.yml'), 'utf8');

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
  'working-directory'?: string;
}
interface Job {
  needs?: string[] | string;
  if?: string;
  'runs-on': string;
  strategy?: { matrix: Record<string, unknown> & { include?: Record<string, string>[] } };
  steps: Step[];
  env?: Record<string, string>;
}
interface Workflow {
  on: Record<string, unknown>;
  env: Record<string, string>;
  jobs: Record<string, Job>;
}

const wf = parse(WORKFLOW_TEXT) as Workflow;
/** The Dockerfile targets agreed for the project (the root Dockerfile builds exactly these). */
const TARGETS = ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'firewall', 'operator'];
const SHA = '0123456789abcdef0123456789abcdef01234567';

const needs = (job: Job) => (Array.isArray(job.needs) ? job.needs : job.needs ? [job.needs] : []);
const step = (job: { steps: Step[] }, pred: (s: Step) => boolean) => {
  const found = job.steps.find(pred);
  if (!found) throw new Error('step not found');
  return found;
};

const tmp = mkdtempSync(join(tmpdir(), 'release-wf-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * Run a step's shell the way a runner would: bash -eo pipefail, GitHub's variables, `${{ }}` expressions
 * replaced from `expr`, and GITHUB_OUTPUT read back as key/value pairs.
 */
function runStep(s: Step, expr: Record<string, string>, env: Record<string, string> = {}, opts: { cwd?: string; path?: string } = {}) {
  const script = s.run!.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_m, e: string) => {
    if (!(e in expr)) throw new Error(`test does not know the expression ${e}`);
    return expr[e]!;
  });
  const output = join(tmp, `output-${Math.random().toString(16).slice(2)}`);
  writeFileSync(output, '');
  const file = join(tmp, `step-${Math.random().toString(16).slice(2)}.sh`);
  writeFileSync(file, script);
  // The shell GitHub uses for `run:` on Linux runners.
  const r = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: opts.cwd ?? ROOT,
    encoding: 'utf8',
    env: {
      PATH: `${opts.path ? `${opts.path}:` : ''}${ROOT}node_modules/.bin:${process.env.PATH}`,
      GITHUB_REF_NAME: 'v1.2.3',
      GITHUB_SHA: SHA,
      GITHUB_OUTPUT: output,
      ...wfEnv,
      ...env,
    },
  });
  return { ...r, outputs: parseGithubOutput(readFileSync(output, 'utf8')) };
}

function parseGithubOutput(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^([\w-]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const end = lines.indexOf(heredoc[2]!, i + 1);
      out[heredoc[1]!] = lines.slice(i + 1, end).join('\n');
      i = end;
    } else if (line.includes('=')) {
      out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
    }
  }
  return out;
}

/** The workflow-level env as a runner would resolve it for an organisation "TaskOrg". */
const wfEnv: Record<string, string> = Object.fromEntries(
  Object.entries(wf.env).map(([k, v]) => [k, String(v).replace("${{ vars.IMAGE_NAMESPACE || 'task-service' }}", 'TaskOrg').replace('${{ vars.PUBLIC_APP_URL }}', 'https://tasks.example.com')]),
);

describe('release workflow', () => {
  it('runs on release tags v* only', () => {
    expect(Object.keys(wf.on)).toEqual(['push']);
    expect(wf.on.push).toEqual({ tags: ['v*'] });
  });

  it('lints, typechecks and tests before any image is built', () => {
    expect(step(wf.jobs.lint!, (s) => Boolean(s.run?.includes('eslint'))).run).toMatch(/eslint \./);
    expect(step(wf.jobs.typecheck!, (s) => Boolean(s.run?.includes('tsc'))).run).toMatch(/tsc --noEmit/);
    expect(step(wf.jobs.test!, (s) => Boolean(s.run?.includes('.ci/run'))).run).toBeTruthy();
    expect(needs(wf.jobs.build!)).toEqual(expect.arrayContaining(['lint', 'typecheck', 'test', 'tags']));
    expect(needs(wf.jobs.rollout!)).toContain('build');
  });

  it('builds every Dockerfile target for linux/amd64 and linux/arm64 and pushes it', () => {
    const build = wf.jobs.build!;
    expect(build.strategy!.matrix.target).toEqual(TARGETS);
    expect(build.steps.some((s) => s.uses?.startsWith('docker/setup-qemu-action'))).toBe(true);
    const push = step(build, (s) => Boolean(s.uses?.startsWith('docker/build-push-action')));
    expect(push.with).toMatchObject({ target: '${{ matrix.target }}', platforms: 'linux/amd64,linux/arm64', push: true, tags: '${{ steps.refs.outputs.tags }}' });
    expect(String(push.with!['build-args'])).toContain('SERVICE_COMMIT=${{ github.sha }}');
    expect(String(push.with!['build-args'])).toContain('PUBLIC_APP_URL=');
    // The root Dockerfile, once it exists, must define every target the workflow builds.
    if (!existsSync(join(ROOT, 'Dockerfile'))) return;
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    for (const t of TARGETS) expect(dockerfile, `Dockerfile target ${t}`).toMatch(new RegExp(`^FROM\\s+\\S+\\s+AS\\s+${t}\\s*$`, 'im'));
    expect(dockerfile).toMatch(/^ARG SERVICE_COMMIT/m);
    expect(dockerfile).toMatch(/^ARG PUBLIC_APP_URL/m);
  });

  it('installs the workspace with the pnpm release that tools/bootstrap.mjs pins (npx stubbed)', () => {
    const action = parse(readFileSync(join(ROOT, '.github/actions/setup/action.yml'), 'utf8')) as { runs: { using: string; steps: Step[] } };
    expect(action.runs.using).toBe('composite');
    const install = step(action.runs, (s) => Boolean(s.run?.includes('install')));
    const bin = join(tmp, 'npx-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'npx'), `#!/bin/sh\nprintf '%s\\n' "$@" > "${tmp}/npx-args"\n`);
    chmodSync(join(bin, 'npx'), 0o755);
    expect(runStep(install, {}, {}, { path: bin }).status).toBe(0);
    const pinned = /pnpm@[\d.]+/.exec(readFileSync(join(ROOT, 'tools/bootstrap.mjs'), 'utf8'))![0];
    expect(readFileSync(join(tmp, 'npx-args'), 'utf8').trim().split('\n')).toEqual(['-y', pinned, 'install', '--frozen-lockfile']);
  });

  it('names three registries in the workflow env and logs in to each where it pushes', () => {
    const registries = [wf.env.REGISTRY_GHCR, wf.env.REGISTRY_DOCKERHUB, wf.env.REGISTRY_QUAY];
    expect(registries).toEqual(['ghcr.io', 'docker.io', 'quay.io']);
    const logins = wf.jobs.build!.steps.filter((s) => s.uses?.startsWith('docker/login-action')).map((s) => s.with!.registry);
    expect(logins).toEqual(['${{ env.REGISTRY_GHCR }}', '${{ env.REGISTRY_DOCKERHUB }}', '${{ env.REGISTRY_QUAY }}']);
  });

  it('takes every image tag from tools/release/tags.ts, never from a literal', () => {
    // No hand-written tag anywhere: the only tag source is the script's output.
    expect(WORKFLOW_TEXT).not.toMatch(/:latest\b|:sha-|type=semver|docker\/metadata-action/);
    expect(step(wf.jobs.build!, (s) => s.id === 'refs').run).toContain('node tools/release/tags.ts');
    expect(step(wf.jobs.tags!, (s) => s.id === 'tags').run).toContain('node tools/release/tags.ts');
  });

  it('computes the tags the way the tags job runs it', () => {
    const r = runStep(step(wf.jobs.tags!, (s) => s.id === 'tags'), {});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.outputs.tags).toBe(`latest\n1.2.3\n1.2\nsha-0123456`);
    expect(JSON.parse(r.outputs.json!)).toEqual(['latest', '1.2.3', '1.2', 'sha-0123456']);
    expect(r.outputs).toMatchObject({ version: '1.2.3', prerelease: 'false' });

    const rc = runStep(step(wf.jobs.tags!, (s) => s.id === 'tags'), {}, { GITHUB_REF_NAME: 'v1.3.0-rc.1' });
    expect(rc.outputs.tags).toBe('1.3.0-rc.1\nsha-0123456');

    const bad = runStep(step(wf.jobs.tags!, (s) => s.id === 'tags'), {}, { GITHUB_REF_NAME: 'v1.3' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('is not a release tag');
  });

  it('refuses a tag that differs from the package manifest version (health reports the manifest)', () => {
    const guard = step(wf.jobs.tags!, (s) => Boolean(s.name?.includes('package manifest')));
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(runStep(guard, { 'steps.tags.outputs.version': version }, { GITHUB_REF_NAME: `v${version}` }).status).toBe(0);
    const wrong = runStep(guard, { 'steps.tags.outputs.version': '99.0.0' }, { GITHUB_REF_NAME: 'v99.0.0' });
    expect(wrong.status).not.toBe(0);
    expect(wrong.stdout).toContain(`does not match package.json version ${version}`);
  });

  it('pushes every tag of the target to the three registries and checks the arm64 image (docker stubbed)', () => {
    const build = wf.jobs.build!;
    const refs = runStep(step(build, (s) => s.id === 'refs'), { 'matrix.target': 'gateway' });
    expect(refs.stderr).toBe('');
    expect(refs.status).toBe(0);
    const expectedRefs = ['ghcr.io', 'docker.io', 'quay.io'].flatMap((reg) =>
      ['latest', '1.2.3', '1.2', 'sha-0123456'].map((t) => `${reg}/taskorg/task-service-gateway:${t}`),
    );
    expect(refs.outputs.tags!.split('\n')).toEqual(expectedRefs);

    // A stand-in `docker` answering `imagetools inspect` with a manifest list, and recording calls.
    const bin = join(tmp, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'docker'), `#!/bin/sh\necho "$*" >> "${tmp}/docker-calls"\nprintf '%s' "$MANIFESTS"\n`);
    chmodSync(join(bin, 'docker'), 0o755);
    const inspect = step(build, (s) => Boolean(s.run?.includes('imagetools inspect')));
    const both = '[{"platform":{"architecture":"amd64","os":"linux"}},{"platform":{"architecture":"arm64","os":"linux"}}]';
    const ok = runStep(inspect, {}, { REFS: refs.outputs.tags!, MANIFESTS: both }, { path: bin });
    expect(ok.status).toBe(0);
    const calls = readFileSync(join(tmp, 'docker-calls'), 'utf8').trim().split('\n');
    expect(calls.map((c) => c.split(' ')[3])).toEqual(expectedRefs);
    const amdOnly = runStep(inspect, {}, { REFS: refs.outputs.tags!, MANIFESTS: '[{"platform":{"architecture":"amd64","os":"linux"}}]' }, { path: bin });
    expect(amdOnly.status).not.toBe(0);
    expect(amdOnly.stdout).toContain('has no arm64 image');
  });

  it('checks the rollout by commit after publishing, only for releases the deployment follows', () => {
    const rollout = wf.jobs.rollout!;
    const check = step(rollout, (s) => Boolean(s.run?.includes('tools/rollout-check.ts')));
    expect(check.run).toContain('--commit');
    expect(check.env).toMatchObject({ ROLLOUT_HEALTH_URL: '${{ vars.ROLLOUT_HEALTH_URL }}', PUBLIC_APP_URL: '${{ vars.PUBLIC_APP_URL }}', EXPECTED_COMMIT: '${{ github.sha }}' });
    expect(rollout.if).toContain("fromJSON(needs.tags.outputs.json)");
  });
});
