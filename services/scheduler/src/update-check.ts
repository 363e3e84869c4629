import type { UpdateStatus } from '@tasksvc/proto';
import type { Logger, Pool } from '@tasksvc/runtime';
import { leaseUpdateCheck, readUpdateCheck, recordUpdateCheck } from './db/update-check.ts';

/** A successful answer is good for a day; a failure is retried after an hour (a stale status misleads). */
const SUCCESS_INTERVAL = '24 hours';
const FAILURE_INTERVAL = '1 hour';
/** One replica asks at a time; a lease outlives the request timeout. */
const LEASE = '2 minutes';
const REQUEST_TIMEOUT_MS = 10_000;
/** A success older than this means checks stopped happening: say "unknown" rather than "current". */
const STALE_AFTER_MS = 48 * 3_600_000;

type Semver = [number, number, number, string];

export function parseVersion(v: string): Semver | null {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] ?? ''] : null;
}

/** Semver precedence, good enough for release listings: a prerelease sorts before its release. */
export function compareVersions(a: string, b: string): number {
  const pa = parseVersion(a);
  const pb = parseVersion(b);
  if (!pa || !pb) throw new Error(`not a version: ${pa ? b : a}`);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return (pa[i] as number) - (pb[i] as number);
  if (pa[3] === pb[3]) return 0;
  if (pa[3] === '') return 1;
  if (pb[3] === '') return -1;
  return pa[3] < pb[3] ? -1 : 1;
}

/**
 * The newest version a release listing names. Accepts an npm registry document (`{version}`, or a
 * packument with `dist-tags.latest`), a GitHub release (`{tag_name}`) or a GitHub release list
 * (`[{tag_name, draft, prerelease}]`, drafts and prereleases ignored).
 */
export function latestFromListing(body: unknown): string {
  const pick = (v: unknown): string | null => (typeof v === 'string' && parseVersion(v) ? v.replace(/^v/, '') : null);
  if (Array.isArray(body)) {
    const versions = body
      .filter((r) => r && typeof r === 'object' && !r.draft && !r.prerelease)
      .map((r) => pick(r.tag_name))
      .filter((v): v is string => v !== null);
    if (versions.length === 0) throw new Error('release list names no version');
    return versions.sort(compareVersions)[versions.length - 1]!;
  }
  if (body && typeof body === 'object') {
    const o = body as Record<string, unknown>;
    const v = pick(o.version) ?? pick(o.tag_name) ?? pick((o['dist-tags'] as Record<string, unknown> | undefined)?.latest);
    if (v) return v;
  }
  throw new Error('response names no version');
}

export interface UpdateCheckOptions {
  url: string;
  disabled: boolean;
  currentVersion: string;
  log: Logger;
  fetch?: typeof fetch;
}

/**
 * GET the listing, following a redirect only within its own origin (at most 3): a redirect elsewhere
 * (another host, or loopback) is refused as an error (issue 56 #10).
 */
async function askListing(opts: UpdateCheckOptions): Promise<Response> {
  let url = opts.url;
  for (let hop = 0; ; hop++) {
    const res = await (opts.fetch ?? fetch)(url, { redirect: 'manual', headers: { accept: 'application/json', 'user-agent': `task-service/${opts.currentVersion}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    if (res.status < 300 || res.status >= 400) return res;
    const next = new URL(res.headers.get('location') ?? '', url);
    if (next.origin !== new URL(opts.url).origin) throw new Error(`HTTP ${res.status}: a redirect to another origin (${next.origin}) is not followed`);
    if (hop >= 2) throw new Error(`HTTP ${res.status}: too many redirects`);
    url = next.href;
  }
}

/**
 * Ask the release listing if it is due (at most once per 24 h across all replicas, state in
 * Postgres). Never throws: a failure is recorded and expires after an hour.
 */
export async function runUpdateCheck(pool: Pool, opts: UpdateCheckOptions): Promise<'checked' | 'not-due' | 'disabled'> {
  if (opts.disabled) return 'disabled';
  try {
    if (!(await leaseUpdateCheck(pool, LEASE))) return 'not-due';
    let latest: string | null = null;
    let error: string | null = null;
    try {
      const res = await askListing(opts);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      latest = latestFromListing(await res.json());
    } catch (err) {
      error = String((err as Error).message ?? err).slice(0, 300);
      opts.log.warn({ url: opts.url, err: error }, 'update check failed; retrying in an hour');
    }
    await recordUpdateCheck(pool, { latest, error }, { success: SUCCESS_INTERVAL, failure: FAILURE_INTERVAL });
    return 'checked';
  } catch (err) {
    opts.log.warn({ err: (err as Error).message }, 'update check state unavailable');
    return 'not-due';
  }
}

/** The admin page's view, compared against the running version at read time (it may have been upgraded since). */
export async function readUpdateStatus(pool: Pool, opts: { disabled: boolean; reason?: string | null; currentVersion: string; now?: Date }): Promise<UpdateStatus> {
  const base = { currentVersion: opts.currentVersion, latestVersion: null, checkedAt: null, error: null, reason: null };
  if (opts.disabled) return { status: 'disabled', ...base, reason: opts.reason ?? 'turned off' };
  const r = await readUpdateCheck(pool);
  if (!r || r.checkedAt === null || r.ok === null) return { status: 'unknown', ...base };
  const view = { currentVersion: opts.currentVersion, latestVersion: r.latestVersion, checkedAt: r.checkedAt.toISOString(), error: r.error, reason: null };
  if (!r.ok) return { status: 'failed', ...view };
  if ((opts.now ?? new Date()).getTime() - r.checkedAt.getTime() > STALE_AFTER_MS || !r.latestVersion) return { status: 'unknown', ...view };
  let newer: boolean;
  try {
    newer = compareVersions(r.latestVersion, opts.currentVersion) > 0;
  } catch {
    return { status: 'unknown', ...view };
  }
  return { status: newer ? 'outdated' : 'current', ...view };
}
