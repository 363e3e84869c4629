/**
 * Finding a pg_dump / pg_restore that can work with a given server. Both refuse (or misread) a
 * server of a newer major than their own, and a pg_restore cannot read an archive written by a
 * newer pg_dump, so the tool used must be of that major or newer. Looked for, in order: the cache
 * that tools/backup/ensure-pg-dump.sh builds into (/var/cache/task-service/pg<MAJOR>/bin, or
 * TASKSVC_PG_DUMP_CACHE), Debian's versioned client directories (/usr/lib/postgresql/<MAJOR>/bin,
 * package postgresql-client-<MAJOR>), then PATH; the newest fitting major wins.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export type PgTool = 'pg_dump' | 'pg_restore';

export interface FoundTool {
  path: string;
  /** e.g. "18.6" */
  version: string;
  major: number;
}

export const DEFAULT_CACHE = '/var/cache/task-service';
export const ENSURE_SCRIPT = 'tools/backup/ensure-pg-dump.sh';

function subdirs(dir: string, pattern: RegExp): string[] {
  try {
    return readdirSync(dir).filter((d) => pattern.test(d)).map((d) => join(dir, d));
  } catch {
    return [];
  }
}

/** Where to look for `tool`, most preferred first (duplicates and missing files dropped). */
export function candidates(tool: PgTool, env: NodeJS.ProcessEnv = process.env): string[] {
  const dirs = [
    ...(env.TASKSVC_PG_DUMP_CACHE ? [join(env.TASKSVC_PG_DUMP_CACHE, 'bin')] : []),
    ...subdirs(DEFAULT_CACHE, /^pg\d+$/).map((d) => join(d, 'bin')),
    ...subdirs('/usr/lib/postgresql', /^\d+$/).map((d) => join(d, 'bin')),
    ...(env.PATH ?? '').split(delimiter).filter(Boolean),
  ];
  // /bin and /usr/bin are one directory on a merged-/usr system: each directory once
  const real = (d: string) => {
    try {
      return realpathSync(d);
    } catch {
      return undefined;
    }
  };
  return [...new Set(dirs.map(real).filter((d) => d !== undefined).map((d) => join(d, tool)))].filter((p) => existsSync(p));
}

/** `pg_dump (PostgreSQL) 18.6` → 18.6; undefined when it does not run. */
export function toolVersion(path: string): FoundTool | undefined {
  try {
    const out = execFileSync(path, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
    const m = /\(PostgreSQL\)\s+((\d+)(?:\.\d+)?)/.exec(out);
    return m ? { path, version: m[1]!, major: Number(m[2]) } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The newest `tool` of major `minMajor` or newer; otherwise an error naming what was found and what
 * to install (no fallback: the backup is a pg_dump archive or nothing).
 */
export function findPgTool(tool: PgTool, minMajor: number, env: NodeJS.ProcessEnv = process.env): FoundTool {
  const found = candidates(tool, env).map(toolVersion).filter((t): t is FoundTool => t !== undefined);
  const fitting = found.filter((t) => t.major >= minMajor).sort((a, b) => b.major - a.major);
  if (fitting[0]) return fitting[0];
  const seen = found.length ? `found only ${found.map((t) => `${t.version} (${t.path})`).join(', ')}` : 'found none';
  throw new Error(
    `${tool} of PostgreSQL ${minMajor} or newer is needed and ${seen}: run ${ENSURE_SCRIPT} (Debian 12, root: builds pg_dump and pg_restore 18 into ${DEFAULT_CACHE}/pg18/bin), ` +
      `or install a PostgreSQL ${minMajor} client (postgresql-client-${minMajor}) and put its bin directory on PATH`,
  );
}
