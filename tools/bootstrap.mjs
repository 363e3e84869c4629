#!/usr/bin/env node
// `npm start` / `npm test` entry. Runs on whatever Node the machine has: installs the workspace
// with a pinned pnpm when needed, then hands over to the Node 24 binary from node_modules.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PNPM = 'pnpm@12.21.0';
const root = fileURLToPath(new URL('..', import.meta.url));
const at = (...p) => join(root, ...p);
const [command, ...rest] = process.argv.slice(2);

const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : 0);
const env = { ...process.env, PATH: [at('node_modules', '.bin'), process.env.PATH].join(delimiter) };

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env, ...opts });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function pnpm(args) {
  const local = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (local.status === 0 && local.stdout.trim() === PNPM.split('@')[1]) return run('pnpm', args);
  return run('npx', ['-y', PNPM, ...args]);
}

function ensureInstalled() {
  const marker = at('node_modules', '.modules.yaml');
  const stale = !existsSync(marker) || !existsSync(at('node_modules', '.bin', 'node')) || mtime(at('pnpm-lock.yaml')) > mtime(marker) || mtime(at('package.json')) > mtime(marker);
  if (!stale) return;
  console.log('[bootstrap] installing the workspace (pnpm, frozen lockfile)…');
  const t0 = Date.now();
  if (pnpm(['install', '--frozen-lockfile']) !== 0) process.exit(1);
  console.log(`[bootstrap] installed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

function ensureUiBuilt() {
  if (existsSync(at('ui', 'dist', 'index.html'))) return;
  const pkg = JSON.parse(readFileSync(at('ui', 'package.json'), 'utf8'));
  if (!pkg.scripts?.build) return;
  console.log('[bootstrap] building the UI…');
  if (pnpm(['--filter', '@tasksvc/ui', 'run', 'build']) !== 0) process.exit(1);
}

const node24 = at('node_modules', '.bin', 'node');

ensureInstalled();
if (command === 'start') {
  ensureUiBuilt();
  process.exit(run(node24, [at('tools', 'start.ts'), ...rest]));
} else if (command === 'test') {
  ensureUiBuilt();
  mkdirSync(at('.cache'), { recursive: true });
  const report = at('.cache', 'vitest-report.json');
  const status = run(node24, [at('node_modules', 'vitest', 'vitest.mjs'), 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...rest]);
  if (existsSync(report)) {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    // A file that failed with none of its tests failed (it could not load, or its beforeAll threw
    // and its tests were skipped) counts as one failure too.
    const failedSuites = (r.testResults ?? []).filter((f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed')).length;
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests + failedSuites} failed, ${skipped} skipped`);
  }
  process.exit(status);
} else {
  console.error('usage: node tools/bootstrap.mjs start|test [args]');
  process.exit(2);
}
