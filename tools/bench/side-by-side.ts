/**
 * Side by side: this system and another HTTP deployment (another task app you run, or a second
 * deployment of this one) under the same load from the same client (http-load.ts: autocannon, Bearer
 * API keys), measured in interleaved rounds — A, B, A, B … per operation — so both see the machine in
 * the same state, then each one's median req/s and p50/p99 and the ratios A ÷ B. Nothing of the other
 * app is built or started here: give its base URL and keys. Load only hosts you run.
 *
 *   node_modules/.bin/node tools/bench/side-by-side.ts \
 *     --a-url http://127.0.0.1:3000 --a-keys-file ours.txt [--a-name ours] [--a-pids 123,124] \
 *     --b-url http://127.0.0.1:8080 --b-keys-file theirs.txt [--b-name reference] [--b-pids 456] \
 *     [--b-create-path /api/tasks] [--b-list-path '/api/tasks?limit=50'] \
 *     [--ops create,list] [--rounds 5] [--seconds 10] [--connections 10]
 *
 * A side's keys: one API key per line, as many users as you want the load spread over. `--*-pids`:
 * that side's server processes on this machine (its database too, if you like): paused (SIGSTOP)
 * while the other side is measured, so its idle wake-ups do not land in the other's latencies, and
 * given `WARM_UP_SECONDS` of the same load unmeasured after it resumes. The other app's paths when
 * they differ from ours (`POST /api/tasks` with `{"title","priority"}`, `GET /api/tasks?limit=50`).
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { httpLoad, type LoadResult, type RequestShape } from './http-load.ts';
import { emitRows } from './lib/report.ts';
import { median } from './lib/stats.ts';
import { signalPids, WARM_UP_SECONDS, type Op } from './lib/targets.ts';

export interface Side {
  name: string;
  url: string;
  keys: string[];
  /** its processes on this machine: paused while the other side is measured */
  pids?: number[];
  /** its requests, when its API differs from ours */
  paths?: Partial<Record<Op, RequestShape>>;
}

export interface SideBySideOptions {
  a: Side;
  b: Side;
  ops: Op[];
  rounds: number;
  seconds: number;
  connections: number;
  /** seconds of unmeasured load before each measurement (default WARM_UP_SECONDS when the side was paused, else 0) */
  warmUpSeconds?: number;
}

export interface OpFigures {
  op: Op;
  a: LoadResult[];
  b: LoadResult[];
}

/** Rounds of A then B (then B then A: neither always goes first) for each operation. */
export async function sideBySide(o: SideBySideOptions): Promise<OpFigures[]> {
  const out: OpFigures[] = [];
  const pausedAll = (s: Side) => s.pids?.length && signalPids(s.pids, 'SIGSTOP');
  const resume = (s: Side) => s.pids?.length && signalPids(s.pids, 'SIGCONT');
  const load = async (s: Side, other: Side, op: Op, seconds: number) => {
    pausedAll(other);
    resume(s);
    const request = s.paths?.[op];
    const warm = o.warmUpSeconds ?? (other.pids?.length || s.pids?.length ? WARM_UP_SECONDS : 0);
    if (warm > 0) await httpLoad({ url: s.url, keys: s.keys, op, seconds: warm, connections: o.connections, request });
    return httpLoad({ url: s.url, keys: s.keys, op, seconds, connections: o.connections, request });
  };
  try {
    for (const op of o.ops) {
      const f: OpFigures = { op, a: [], b: [] };
      for (let i = 0; i < o.rounds; i++) {
        const order = i % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const);
        for (const which of order) {
          const [s, other] = which === 'a' ? [o.a, o.b] : [o.b, o.a];
          f[which].push(await load(s, other, op, o.seconds));
        }
      }
      out.push(f);
    }
  } finally {
    resume(o.a);
    resume(o.b);
  }
  return out;
}

const med = (rs: LoadResult[], pick: (r: LoadResult) => number) => median(rs.map(pick));

/** The table: per operation and side, medians over the rounds, and A ÷ B per round (median and range). */
export function report(o: SideBySideOptions, figures: OpFigures[]): void {
  const rows: (string | number)[][] = [];
  for (const f of figures) {
    const ratios = f.a.map((a, i) => a.reqPerSec / f.b[i]!.reqPerSec).sort((x, y) => x - y);
    const p99s = f.a.map((a, i) => a.p99 / f.b[i]!.p99).sort((x, y) => x - y);
    for (const [side, rs] of [
      [o.a, f.a],
      [o.b, f.b],
    ] as const) {
      const first = side === o.a;
      rows.push([
        f.op,
        `${first ? 'A' : 'B'}: ${side.name}`,
        med(rs, (r) => r.reqPerSec).toFixed(0),
        med(rs, (r) => r.p50).toFixed(1),
        med(rs, (r) => r.p99).toFixed(1),
        rs.reduce((n, r) => n + r.non2xx + r.errors, 0),
        first ? `${median(ratios).toFixed(2)} (${ratios[0]!.toFixed(2)}–${ratios.at(-1)!.toFixed(2)})` : '',
        first ? `${median(p99s).toFixed(2)}` : '',
        med(rs, (r) => r.loadAverage).toFixed(1),
      ]);
    }
  }
  emitRows(
    `Side by side: ${o.a.name} (${o.a.url}) and ${o.b.name} (${o.b.url}) under the same load from the same client: autocannon, ${o.connections} connections, ${o.a.keys.length} and ${o.b.keys.length} API keys; ${o.rounds} interleaved rounds of ${o.seconds} s per operation${o.a.pids?.length || o.b.pids?.length ? ', the side not measured paused (SIGSTOP), each measurement after its warm-up' : ''}; medians over the rounds; A ÷ B per round (median, range); load average ${loadavg()[0]!.toFixed(2)} at the end`,
    ['operation', 'side', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx + errors', 'req/s A ÷ B', 'p99 A ÷ B', 'load avg'],
    rows,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      'a-url': { type: 'string' },
      'a-keys-file': { type: 'string' },
      'a-name': { type: 'string', default: 'A' },
      'a-pids': { type: 'string' },
      'b-url': { type: 'string' },
      'b-keys-file': { type: 'string' },
      'b-name': { type: 'string', default: 'B' },
      'b-pids': { type: 'string' },
      'b-create-path': { type: 'string' },
      'b-list-path': { type: 'string' },
      ops: { type: 'string', default: 'create,list' },
      rounds: { type: 'string', default: '5' },
      seconds: { type: 'string', default: '10' },
      connections: { type: 'string', default: '10' },
    },
  });
  const problems: string[] = [];
  const keys = (file: string | undefined, flag: string) => {
    if (!file) {
      problems.push(`${flag}: a file with one API key per line`);
      return [];
    }
    const k = readFileSync(file, 'utf8').split(/\s+/).filter(Boolean);
    if (k.length === 0) problems.push(`${flag}: ${file} holds no key`);
    return k;
  };
  const url = (v: string | undefined, flag: string) => {
    if (!v || !/^https?:\/\//.test(v)) problems.push(`${flag}: the base URL, e.g. http://127.0.0.1:3000`);
    return v ?? '';
  };
  const pids = (v: string | undefined, flag: string) => {
    const p = v?.split(',').map(Number);
    if (p?.some((n) => !Number.isInteger(n) || n <= 0)) problems.push(`${flag}: process ids, comma-separated`);
    return p;
  };
  const ops = values.ops.split(',').map((s) => s.trim());
  if (ops.some((op) => op !== 'create' && op !== 'list')) problems.push('--ops: create, list or both (comma-separated)');
  const count = (v: string, flag: string) => {
    if (!/^\d+$/.test(v) || Number(v) < 1) problems.push(`${flag}: a whole number from 1`);
    return Number(v);
  };
  const o: SideBySideOptions = {
    a: { name: values['a-name'], url: url(values['a-url'], '--a-url'), keys: keys(values['a-keys-file'], '--a-keys-file'), pids: pids(values['a-pids'], '--a-pids') },
    b: {
      name: values['b-name'],
      url: url(values['b-url'], '--b-url'),
      keys: keys(values['b-keys-file'], '--b-keys-file'),
      pids: pids(values['b-pids'], '--b-pids'),
      paths: {
        ...(values['b-create-path'] ? { create: { path: values['b-create-path'] } } : {}),
        ...(values['b-list-path'] ? { list: { path: values['b-list-path'] } } : {}),
      },
    },
    ops: ops as Op[],
    rounds: count(values.rounds, '--rounds'),
    seconds: count(values.seconds, '--seconds'),
    connections: count(values.connections, '--connections'),
  };
  if (problems.length) {
    process.stderr.write(`side-by-side: ${problems.join('\n  ')}\n`);
    process.exit(2);
  }
  report(o, await sideBySide(o));
}
