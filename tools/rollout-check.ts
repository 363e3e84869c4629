/**
 * Rollout check, run by the release pipeline after images are pushed:
 *
 *   node_modules/.bin/node tools/rollout-check.ts --commit <sha>      (or EXPECTED_COMMIT=<sha>)
 *
 * Polls `${ROLLOUT_HEALTH_URL || PUBLIC_APP_URL}/api/health` until the running deployment reports
 * the tagged commit in `commit`. It compares `commit`, never `version`: an image watcher once
 * answered 200 without replacing the container, and an unchanged `version` (a re-tag, or a
 * release that did not bump the manifest) would have hidden the stale deployment.
 *
 * Success needs HTTP 200 with the expected commit. Connection errors, time-outs, non-JSON
 * answers and 503s (a container that is still migrating, or whose database is briefly away) are
 * tolerated: they are reported and polled again. After the last attempt (30 × 20 s = ten minutes
 * by default) it gives up with exit code 1. A URL without http:// or https:// is refused with
 * exit code 2 before any request, naming the variable it came from.
 *
 * Flags (mostly for tests): --url <base>, --attempts <n> (or --max-attempts), --interval
 * <20s | 500ms | a number of seconds>, --interval-ms <n>, --request-timeout <duration>.
 */

export const DEFAULT_ATTEMPTS = 30;
export const DEFAULT_INTERVAL_MS = 20_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

export interface RolloutOptions {
  /** the health endpoint, fully resolved (…/api/health) */
  healthUrl: string;
  expectedCommit: string;
  attempts: number;
  intervalMs: number;
  requestTimeoutMs: number;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** `20s`, `500ms`, `2m`, or a bare number of seconds (fractions allowed). */
export function parseDuration(value: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  if (!m) throw new UsageError(`${flag} must be a duration such as 20s, 500ms or 2m (got "${value}")`);
  const n = Number(m[1]);
  return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000);
}

/** Flags by name; a single bare argument is taken as the commit (`rollout-check.ts <sha>`). */
function parseFlags(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      if (out.commit !== undefined) throw new UsageError(`unexpected argument "${a}"`);
      out.commit = a;
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0) {
      out[a.slice(2, eq)] = a.slice(eq + 1);
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) throw new UsageError(`${a} needs a value`);
    out[a.slice(2)] = value;
    i++;
  }
  return out;
}

/** The health URL from a base URL: `${base}/api/health`, unless the base already names it. */
export function healthUrlFrom(base: string, variable: string): string {
  const value = base.trim();
  if (!/^https?:\/\/[^/\s]/i.test(value) || !URL.canParse(value)) {
    throw new UsageError(`${variable} must include a scheme, https:// or http:// (got "${value}"); e.g. ${variable}=https://tasks.example.com`);
  }
  const trimmed = value.replace(/\/+$/, '');
  return /\/api\/health$/.test(new URL(trimmed).pathname) ? trimmed : `${trimmed}/api/health`;
}

/** Options from flags and environment; throws UsageError for anything an operator must fix. */
export function resolveOptions(argv: string[], env: Record<string, string | undefined>): RolloutOptions {
  const flags = parseFlags(argv);
  if (flags['max-attempts'] !== undefined) flags.attempts ??= flags['max-attempts'];
  const known = new Set(['commit', 'url', 'attempts', 'max-attempts', 'interval', 'interval-ms', 'request-timeout']);
  for (const k of Object.keys(flags)) if (!known.has(k)) throw new UsageError(`unknown flag --${k}`);

  const expectedCommit = (flags.commit ?? env.EXPECTED_COMMIT ?? '').trim();
  if (!expectedCommit) throw new UsageError('the expected commit is missing: pass --commit <sha> or set EXPECTED_COMMIT');

  let base: string | undefined;
  let variable: string;
  if (flags.url !== undefined) [base, variable] = [flags.url, '--url'];
  else if (env.ROLLOUT_HEALTH_URL) [base, variable] = [env.ROLLOUT_HEALTH_URL, 'ROLLOUT_HEALTH_URL'];
  else [base, variable] = [env.PUBLIC_APP_URL, 'PUBLIC_APP_URL'];
  if (!base) throw new UsageError('no URL to poll: set ROLLOUT_HEALTH_URL (or PUBLIC_APP_URL) to the public origin, including https:// or http://');

  const attempts = flags.attempts === undefined ? DEFAULT_ATTEMPTS : Number(flags.attempts);
  if (!Number.isInteger(attempts) || attempts < 1) throw new UsageError(`--attempts must be a positive integer (got "${flags.attempts}")`);
  const intervalMs =
    flags['interval-ms'] !== undefined ? parseDuration(`${flags['interval-ms']}ms`, '--interval-ms') : flags.interval !== undefined ? parseDuration(flags.interval, '--interval') : DEFAULT_INTERVAL_MS;
  const requestTimeoutMs = flags['request-timeout'] !== undefined ? parseDuration(flags['request-timeout'], '--request-timeout') : Math.min(DEFAULT_REQUEST_TIMEOUT_MS, Math.max(intervalMs, 1_000));
  if (requestTimeoutMs < 1) throw new UsageError('--request-timeout must be positive');

  return { healthUrl: healthUrlFrom(base, variable), expectedCommit, attempts, intervalMs, requestTimeoutMs };
}

/**
 * Same commit: equal ignoring case, or one is an abbreviation (≥ 7 hex characters) of the other,
 * so `--commit abc1234` matches an image built with the full SHA and vice versa.
 */
export function sameCommit(reported: string, expected: string): boolean {
  const a = reported.trim().toLowerCase();
  const b = expected.trim().toLowerCase();
  if (a === b) return true;
  const hex = /^[0-9a-f]{7,64}$/;
  return hex.test(a) && hex.test(b) && (a.startsWith(b) || b.startsWith(a));
}

export type PollResult =
  | { kind: 'done'; commit: string; version: string | undefined }
  | { kind: 'waiting'; detail: string; commit?: string | null; version?: string };

export async function pollOnce(opts: RolloutOptions): Promise<PollResult> {
  let res: Response;
  try {
    res = await fetch(opts.healthUrl, { headers: { accept: 'application/json', 'cache-control': 'no-cache' }, signal: AbortSignal.timeout(opts.requestTimeoutMs) });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const reason = e.name === 'TimeoutError' ? `no answer within ${opts.requestTimeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { kind: 'waiting', detail: `request failed (${reason})` };
  }
  const text = await res.text().catch(() => '');
  let body: { status?: unknown; version?: unknown; commit?: unknown } | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') body = parsed;
  } catch {
    body = undefined;
  }
  const version = typeof body?.version === 'string' ? body.version : undefined;
  const commit = typeof body?.commit === 'string' ? body.commit : body?.commit === null ? null : undefined;
  const seen = `commit=${commit === undefined ? '(missing)' : String(commit)} version=${version ?? '(missing)'}`;
  if (!body) return { kind: 'waiting', detail: `HTTP ${res.status}, not a JSON health answer` };
  if (res.status !== 200) return { kind: 'waiting', detail: `HTTP ${res.status} status=${String(body.status)} ${seen}`, commit, version };
  if (typeof commit === 'string' && sameCommit(commit, opts.expectedCommit)) return { kind: 'done', commit, version };
  const why = commit === null ? 'the running image has no commit (built without SERVICE_COMMIT?)' : 'still the previous deployment';
  return { kind: 'waiting', detail: `HTTP 200 ${seen}: ${why}`, commit, version };
}

export interface RolloutIo {
  out(line: string): void;
  err(line: string): void;
  sleep(ms: number): Promise<void>;
}

/** Poll until the expected commit is served; returns the process exit code (0 or 1). */
export async function runRolloutCheck(opts: RolloutOptions, io: RolloutIo): Promise<number> {
  const budget = formatMs(opts.attempts * opts.intervalMs);
  io.out(`[rollout] waiting for ${opts.healthUrl} to report commit ${opts.expectedCommit} (${opts.attempts} polls, every ${formatMs(opts.intervalMs)}, about ${budget})`);
  let last: PollResult | undefined;
  for (let attempt = 1; attempt <= opts.attempts; attempt++) {
    const started = Date.now();
    last = await pollOnce(opts);
    if (last.kind === 'done') {
      io.out(`[rollout] poll ${attempt}/${opts.attempts}: commit ${last.commit} is live (version ${last.version ?? 'unknown'}); rollout confirmed`);
      return 0;
    }
    io.out(`[rollout] poll ${attempt}/${opts.attempts}: ${last.detail}`);
    // Polls start every interval (a slow answer shortens the pause), so 30 × 20 s stays ten minutes.
    if (attempt < opts.attempts) await io.sleep(Math.max(0, opts.intervalMs - (Date.now() - started)));
  }
  const lastSeen = last?.kind === 'waiting' ? last.detail : 'nothing';
  io.err(
    `[rollout] giving up after ${opts.attempts} polls (${budget}): ${opts.healthUrl} never reported commit ${opts.expectedCommit}. ` +
      `Last answer: ${lastSeen}. The new image is not serving: check that the image watcher pulled it and that the container started (migrations, configuration).`,
  );
  return 1;
}

function formatMs(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms >= 1000 && ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

export async function main(argv: string[], env: Record<string, string | undefined>, io: RolloutIo): Promise<number> {
  let opts: RolloutOptions;
  try {
    opts = resolveOptions(argv, env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`rollout-check: ${err.message}`);
    return 2;
  }
  return runRolloutCheck(opts, io);
}

if (import.meta.filename === process.argv[1]) {
  // The CLI edge: the only place this tool reads the environment.
  process.exitCode = await main(process.argv.slice(2), process.env, {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  });
}
