/**
 * Firewall blacklist benchmark: apply time of the daemon's set-based ruleset vs a rule-per-entry
 * ruleset at 1k / 100k (/ 1M with --1m) entries, and adding one entry to a 100k list.
 *
 * How measured: wall-clock around one libnftables call (nft_run_cmd_from_buffer, in-process via
 * koffi, the daemon's own code path): parse + netlink batch + kernel commit. Script generation is
 * timed separately. Median of --reps runs (default 3; 1 for ≥100k rule-per-entry). Runs inside a
 * private network namespace (re-execs itself under `unshare -n`), so the host ruleset is untouched.
 * Needs root and libnftables1. Usage: node_modules/.bin/node tools/bench/firewall.ts [--1m] [--reps N]
 */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseConfig } from '../../services/firewall/src/config.ts';
import { nftAvailable, nftRun } from '../../services/firewall/src/nft.ts';
import { emptyRules } from '../../services/firewall/src/rules.ts';
import { buildRuleset, TABLE } from '../../services/firewall/src/ruleset.ts';

const args = process.argv.slice(2);
const withMillion = args.includes('--1m');
const repsArg = args.indexOf('--reps');
const REPS = repsArg >= 0 ? Number(args[repsArg + 1]) : 3;

if (process.getuid?.() !== 0) {
  console.log('firewall bench: needs root (nftables); skipped');
  process.exit(0);
}
if (!nftAvailable()) {
  console.log('firewall bench: libnftables1 not installed; skipped');
  process.exit(0);
}
if (!process.env.FW_BENCH_IN_NETNS) {
  const r = spawnSync('unshare', ['-n', process.execPath, fileURLToPath(import.meta.url), ...args], { stdio: 'inherit', env: { ...process.env, FW_BENCH_IN_NETNS: '1' } });
  process.exit(r.status ?? 1);
}

const cfg = parseConfig({ socket_path: '/x', data_dir: '/x', log_dir: '/x' });
if (!cfg.ok) throw new Error('default config invalid');
const config = cfg.config;

/** n distinct random public-looking IPv4 addresses (deterministic). */
function addresses(n: number): string[] {
  const out = new Set<string>();
  let x = 0x2545f491;
  while (out.size < n) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const v = x >>> 0;
    const a = 11 + (v >>> 24) % 200;
    out.add(`${a}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`);
  }
  return [...out];
}

const setScript = (ips: string[]) => buildRuleset({ config, rules: { ...emptyRules(), blacklist: ips }, bridges: [] });

function rulePerEntryScript(ips: string[]): string {
  const lines = [`add table inet ${TABLE}`, `delete table inet ${TABLE}`, `add table inet ${TABLE}`, `add chain inet ${TABLE} input { type filter hook input priority filter; policy accept; }`];
  for (const ip of ips) lines.push(`add rule inet ${TABLE} input ip saddr ${ip} counter drop`);
  return `${lines.join('\n')}\n`;
}

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const fmt = (ms: number | undefined) => (ms === undefined ? 'skipped' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);

interface Row {
  what: string;
  set?: number;
  rules?: number;
  gen?: number;
}
const rows: Row[] = [];

const sizes = [1_000, 100_000, ...(withMillion ? [1_000_000] : [])];
for (const n of sizes) {
  const ips = addresses(n);
  let script = '';
  const gen = time(() => (script = setScript(ips)));
  const setRuns: number[] = [];
  for (let i = 0; i < (n >= 1_000_000 ? 1 : REPS); i++) setRuns.push(time(() => nftRun(script)));
  // Rule-per-entry at 1M takes many minutes; only with --1m and then once.
  let ruleMs: number | undefined;
  if (n <= 100_000 || args.includes('--1m-rules')) {
    const rs = rulePerEntryScript(ips);
    const ruleRuns: number[] = [];
    for (let i = 0; i < (n >= 100_000 ? 1 : REPS); i++) ruleRuns.push(time(() => nftRun(rs)));
    ruleMs = median(ruleRuns);
  }
  rows.push({ what: `apply ${n.toLocaleString('en')} entries`, set: median(setRuns), rules: ruleMs, gen });
  console.error(`[firewall bench] ${n} done`);
}

// Single-entry add to a 100k list: incremental element/rule add, and the daemon's full re-apply.
{
  const ips = addresses(100_001);
  const base = ips.slice(0, 100_000);
  const extra = ips[100_000]!;
  nftRun(setScript(base));
  const addSet = time(() => nftRun(`add element inet ${TABLE} blacklist-v4 { ${extra} }`));
  const reapply = time(() => nftRun(setScript(ips)));
  nftRun(rulePerEntryScript(base));
  const addRule = time(() => nftRun(`add rule inet ${TABLE} input ip saddr ${extra} counter drop`));
  rows.push({ what: 'add 1 entry to 100,000 (incremental)', set: addSet, rules: addRule });
  rows.push({ what: 'daemon apply of 100,000 + 1 (full replace)', set: reapply });
}
nftRun(`add table inet ${TABLE}\ndelete table inet ${TABLE}`);

const head = ['case', 'hash set (daemon)', 'rule per entry', 'script generation'];
const body = rows.map((r) => [r.what, fmt(r.set), fmt(r.rules), r.gen === undefined ? '' : fmt(r.gen)]);
const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log(line(head));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const b of body) console.log(line(b));
console.log(`\nMeasured: wall clock around one in-process libnftables batch (parse + netlink + kernel commit), median of ${REPS} (1 run for ≥100k rule-per-entry and 1M), random IPv4 addresses, private netns.`);
if (!withMillion) console.log('1M entries: pass --1m (set only; add --1m-rules for the rule-per-entry side, which takes minutes).');
