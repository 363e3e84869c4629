/**
 * `npm run bench`: every benchmark in tools/bench, one after another (they would disturb each
 * other in parallel on a small machine), each printing its own table with how it was measured.
 * The combined output is written to .bench/results.json. Pass names to run a subset:
 * `npm run bench -- bus api`. Firewall benchmarks need root and nftables; they say so and skip.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..', '..');
const ALL = ['bus', 'api', 'webhooks', 'cron', 'firewall'];
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const names = (wanted.length ? wanted : ALL).filter((n) => {
  const ok = existsSync(join(here, `${n}.ts`));
  if (!ok) console.log(`[bench] ${n}: no tools/bench/${n}.ts, skipped`);
  return ok;
});

interface Result {
  bench: string;
  exitCode: number;
  seconds: number;
  output: string;
}

const results: Result[] = [];
for (const name of names) {
  console.log(`\n[bench] ${name} (load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} cores)`);
  const t0 = Date.now();
  const child = spawn(process.execPath, [join(here, `${name}.ts`)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    process.stdout.write(d);
  });
  const exitCode = await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  results.push({ bench: name, exitCode, seconds: (Date.now() - t0) / 1000, output });
}

mkdirSync(join(root, '.bench'), { recursive: true });
const file = join(root, '.bench', 'results.json');
writeFileSync(file, JSON.stringify({ at: new Date().toISOString(), node: process.version, cores: cpus().length, results }, null, 2));
console.log(`\n[bench] results written to ${file}`);
process.exit(results.some((r) => r.exitCode !== 0) ? 1 : 0);
