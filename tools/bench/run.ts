/**
 * `npm run bench`: every benchmark in tools/bench, one after another (they would disturb each
 * other in parallel on a small machine), each printing its own table with how it was measured.
 * The combined output is written to .bench/results.json and, for a full run, rendered into
 * docs/benchmarks.md (tools/bench/docs.ts). Pass names to run a subset:
 * `npm run bench -- bus api`. Firewall benchmarks need root and nftables; they say so and skip.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { renderBenchmarks, type BenchResult, type Results } from './docs.ts';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..', '..');
/**
 * Benches that run another's file with arguments. `http-pg-defaults`: the create and list rows (logging
 * off, write limits on as shipped, distributed) against PostgreSQL as distributions ship it (JIT on,
 * fsync on, autovacuum on), next to `http`'s on the bench's embedded server; http.ts measures its
 * baseline in the same run, so each ratio is against a baseline on the same server.
 */
const VARIANTS: Record<string, { file: string; args: string[] }> = {
  'http-pg-defaults': { file: 'http', args: ['--pg', 'defaults', '--only', 'off,limits,distributed'] },
};
const ALL = ['http', 'http-pg-defaults', 'gc', 'footprint', 'sizing', 'idle', 'bus', 'api', 'complete', 'webhooks', 'cron', 'import', 'export', 'caldav', 'reminders', 'firewall'];
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const fileOf = (n: string) => VARIANTS[n]?.file ?? n;
const names = (wanted.length ? wanted : ALL).filter((n) => {
  const ok = existsSync(join(here, `${fileOf(n)}.ts`));
  if (!ok) console.log(`[bench] ${n}: no tools/bench/${n}.ts, skipped`);
  return ok;
});

const results: BenchResult[] = [];
for (const name of names) {
  const loadAverage = loadavg()[0]!;
  console.log(`\n[bench] ${name} (load average ${loadAverage.toFixed(2)} on ${cpus().length} cores)`);
  const t0 = Date.now();
  const child = spawn(process.execPath, [join(here, `${fileOf(name)}.ts`), ...(VARIANTS[name]?.args ?? [])], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    process.stdout.write(d);
  });
  const exitCode = await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  results.push({ bench: name, exitCode, seconds: (Date.now() - t0) / 1000, output, loadAverage });
}

mkdirSync(join(root, '.bench'), { recursive: true });
const file = join(root, '.bench', 'results.json');
const all: Results = { at: new Date().toISOString(), node: process.version, cores: cpus().length, results };
writeFileSync(file, JSON.stringify(all, null, 2));
// the docs show a full run only: a subset would drop the other benches' figures
if (wanted.length === 0) writeFileSync(join(root, 'docs', 'benchmarks.md'), renderBenchmarks(all));
console.log(`\n[bench] results written to ${file}${wanted.length === 0 ? ' and docs/benchmarks.md' : ''}`);
process.exit(results.some((r) => r.exitCode !== 0) ? 1 : 0);
