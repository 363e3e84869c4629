import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger } from '../../../../tools/testenv/index.ts';
import { loadConfig } from '../config.ts';
import { PASSWORD_FILE, startLocalPostgres, type LocalPostgres } from './local-postgres.ts';
import { createPool } from './pool.ts';

/**
 * The embedded PostgreSQL of `npm start` must not trust every local user (#19.3). Another OS user
 * (`nobody`, through runuser: needs root) tries the loopback port without and with a guessed
 * password, and the socket directory.
 */
const asRoot = process.getuid?.() === 0 && spawnSync('which', ['psql']).status === 0;

describe.skipIf(!asRoot)('embedded PostgreSQL and other local users', () => {
  let server: LocalPostgres;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = join(mkdtempSync(join(tmpdir(), 'pg-auth-')), 'postgres');
    server = await startLocalPostgres({ dataDir, log: quietLogger() });
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const asNobody = (args: string[]) =>
    spawnSync('runuser', ['-u', 'nobody', '--', 'psql', '-w', '-X', '-tA', ...args, '-c', 'SELECT 1'], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, PGCONNECT_TIMEOUT: '5' } });

  it('keeps a generated password in the data folder, readable by its owner only', () => {
    const file = join(dataDir, PASSWORD_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim().length).toBeGreaterThanOrEqual(24);
    expect(statSync(dataDir).mode & 0o077).toBe(0);
  });

  it('the owner connects with the password; without it nobody does', async () => {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    expect((await c.query('SHOW password_encryption')).rows[0].password_encryption).toBe('scram-sha-256');
    expect((await c.query('SHOW listen_addresses')).rows[0].listen_addresses).toBe('127.0.0.1');
    await c.end();
    const noPassword = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${server.port}/postgres` });
    await expect(noPassword.connect()).rejects.toThrow(/password/);
  });

  it('a DATABASE_URL naming the socket directory (libpq form) passes the config check and connects, with the password', async () => {
    const password = encodeURIComponent(readFileSync(join(dataDir, PASSWORD_FILE), 'utf8').trim());
    const url = `postgres://postgres:${password}@/postgres?host=${join(dataDir, 'sock')}&port=${server.port}`;
    const config = loadConfig({ DATABASE_URL: url, AUTH_SECRET: 'a'.repeat(32), AUTH_TRUST_HOST: 'true' });
    const pool = createPool(config.DATABASE_URL, quietLogger());
    try {
      expect((await pool.query<{ socket: boolean }>('SELECT inet_server_addr() IS NULL AS socket')).rows[0]!.socket).toBe(true);
    } finally {
      await pool.end();
    }
    expect(() => loadConfig({ DATABASE_URL: 'postgres://postgres:pw@/postgres?port=5432', AUTH_SECRET: 'a'.repeat(32), AUTH_TRUST_HOST: 'true' })).toThrow(/DATABASE_URL/);
  });

  it('another OS user cannot connect over TCP or through the socket directory', () => {
    const tcp = asNobody(['-h', '127.0.0.1', '-p', String(server.port), '-U', 'postgres', '-d', 'postgres']);
    expect(tcp.status, tcp.stdout).not.toBe(0);
    expect(tcp.stderr).toMatch(/password/);
    const guessed = spawnSync('runuser', ['-u', 'nobody', '--', 'psql', '-X', '-tA', `postgres://postgres:postgres@127.0.0.1:${server.port}/postgres`, '-c', 'SELECT 1'], { encoding: 'utf8', timeout: 30_000 });
    expect(guessed.status).not.toBe(0);
    expect(guessed.stderr).toMatch(/password authentication failed/);
    const socket = asNobody(['-h', join(dataDir, 'sock'), '-p', String(server.port), '-U', 'postgres', '-d', 'postgres']);
    expect(socket.status, socket.stdout).not.toBe(0);
    expect(socket.stderr).toMatch(/permission denied|No such file|password/i);
  });
});
