import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { healthUrlFrom, parseDuration, resolveOptions, sameCommit, UsageError } from '../rollout-check.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NODE = `${ROOT}node_modules/.bin/node`;
const OLD = '1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const NEW = '2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';

/** A health endpoint whose answer is chosen per request number (1-based). */
interface FakeHealth {
  base: string;
  /** requests that reached /api/health */
  hits: number;
  paths: string[];
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function fakeHealth(answer: (n: number, req: IncomingMessage, res: ServerResponse) => void): Promise<FakeHealth> {
  const state: FakeHealth = { base: '', hits: 0, paths: [] };
  const server = createServer((req, res) => {
    state.paths.push(req.url ?? '');
    if (req.url !== '/api/health') return res.writeHead(404).end();
    state.hits++;
    answer(state.hits, req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

function health(res: ServerResponse, status: number, commit: string | null, version = '1.2.3') {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ status: status === 200 ? 'ok' : 'error', version, commit, timestamp: new Date().toISOString(), cron: null }));
}

/** Run the real CLI (asynchronously: the fake server lives in this process). */
function runCheck(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // A clean environment: a ROLLOUT_HEALTH_URL of the developer's shell must not leak in.
    const child = spawn(NODE, ['tools/rollout-check.ts', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// Short pauses, but a generous per-request limit: on a loaded machine a slow answer must not turn
// into a failed poll, or the poll counts below would depend on timing.
const PATIENT = ['--request-timeout', '60s'];
const FAST = ['--interval', '20ms', '--attempts', '6', ...PATIENT];

describe('rollout check against a local health endpoint', () => {
  it('waits until the commit switches, printing each poll', async () => {
    const h = await fakeHealth((n, _req, res) => health(res, 200, n <= 3 ? OLD : NEW));
    const r = await runCheck(['--commit', NEW, ...FAST], { ROLLOUT_HEALTH_URL: h.base });
    expect(r.code).toBe(0);
    expect(h.hits).toBe(4);
    for (const n of [1, 2, 3]) expect(r.stdout).toContain(`poll ${n}/6: HTTP 200 commit=${OLD}`);
    expect(r.stdout).toContain(`poll 4/6: commit ${NEW} is live (version 1.2.3); rollout confirmed`);
  });

  it('gives up with a non-zero exit and a clear message when the commit never switches', async () => {
    const h = await fakeHealth((_n, _req, res) => health(res, 200, OLD));
    const r = await runCheck(['--commit', NEW, '--interval', '10ms', '--attempts', '4', ...PATIENT], { ROLLOUT_HEALTH_URL: h.base });
    expect(r.code).toBe(1);
    expect(h.hits).toBe(4);
    expect(r.stdout.match(/poll \d\/4/g)).toEqual(['poll 1/4', 'poll 2/4', 'poll 3/4', 'poll 4/4']);
    expect(r.stderr).toContain(`giving up after 4 polls`);
    expect(r.stderr).toContain(`never reported commit ${NEW}`);
    expect(r.stderr).toContain(`commit=${OLD}`);
  });

  it('tolerates 503 while waiting, even when the 503 already carries the new commit', async () => {
    const h = await fakeHealth((n, _req, res) => health(res, n <= 2 ? 503 : 200, NEW));
    const r = await runCheck(['--commit', NEW, ...FAST], { ROLLOUT_HEALTH_URL: h.base });
    expect(r.code).toBe(0);
    expect(h.hits).toBe(3);
    expect(r.stdout).toContain('poll 1/6: HTTP 503 status=error');
    expect(r.stdout).toContain('poll 2/6: HTTP 503 status=error');
  });

  it('keeps waiting while the version matches but the commit is stale', async () => {
    // Same version before and after: only the commit tells the containers apart.
    const h = await fakeHealth((n, _req, res) => health(res, 200, n <= 4 ? OLD : NEW, '1.2.3'));
    const r = await runCheck(['--commit', NEW, ...FAST], { ROLLOUT_HEALTH_URL: h.base });
    expect(r.code).toBe(0);
    expect(h.hits).toBe(5);
    expect(r.stdout).toContain('still the previous deployment');

    const never = await fakeHealth((_n, _req, res) => health(res, 200, OLD, '1.2.3'));
    const stale = await runCheck(['--commit', NEW, '--interval', '10ms', '--attempts', '3', ...PATIENT], { ROLLOUT_HEALTH_URL: never.base });
    expect(stale.code).toBe(1);
    expect(never.hits).toBe(3);
  });

  it('tolerates dropped connections, non-JSON answers and a null commit', async () => {
    const h = await fakeHealth((n, req, res) => {
      if (n === 1) return req.socket.destroy();
      if (n === 2) return res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>');
      if (n === 3) return health(res, 200, null);
      health(res, 200, NEW);
    });
    const r = await runCheck(['--commit', NEW, ...FAST], { ROLLOUT_HEALTH_URL: h.base });
    expect(r.code).toBe(0);
    expect(h.hits).toBe(4);
    expect(r.stdout).toMatch(/poll 1\/6: request failed/);
    expect(r.stdout).toContain('poll 2/6: HTTP 502, not a JSON health answer');
    expect(r.stdout).toContain('poll 3/6: HTTP 200 commit=null');
  });

  it('tolerates a server that is not up yet', async () => {
    // Reserve a port, close it: the first poll gets ECONNREFUSED and the check keeps going until the attempts run out.
    const h = await fakeHealth((_n, _req, res) => health(res, 200, NEW));
    const base = h.base;
    await Promise.all(servers.splice(0).map((s) => new Promise((res) => s.close(res))));
    const r = await runCheck(['--commit', NEW, '--interval', '10ms', '--attempts', '2'], { ROLLOUT_HEALTH_URL: base });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/poll 1\/2: request failed \(ECONNREFUSED\)/);
  });

  it('prefers ROLLOUT_HEALTH_URL, falls back to PUBLIC_APP_URL, and reads EXPECTED_COMMIT', async () => {
    const right = await fakeHealth((_n, _req, res) => health(res, 200, NEW));
    const wrong = await fakeHealth((_n, _req, res) => health(res, 200, OLD));
    const both = await runCheck(FAST, { ROLLOUT_HEALTH_URL: `${right.base}/`, PUBLIC_APP_URL: wrong.base, EXPECTED_COMMIT: NEW });
    expect(both.code).toBe(0);
    expect(wrong.hits).toBe(0);
    const fallback = await runCheck(['--commit', NEW.slice(0, 7), ...FAST], { PUBLIC_APP_URL: right.base });
    expect(fallback.code).toBe(0);
    expect(right.paths.every((p) => p === '/api/health')).toBe(true);
    expect(right.hits).toBe(2);
  });

  it('refuses a URL without a scheme with exit code 2, naming the variable', async () => {
    const h = await fakeHealth((_n, _req, res) => health(res, 200, NEW));
    const hostOnly = h.base.replace('http://', '');
    const rollout = await runCheck(['--commit', NEW], { ROLLOUT_HEALTH_URL: hostOnly });
    expect(rollout.code).toBe(2);
    expect(rollout.stderr).toContain('ROLLOUT_HEALTH_URL must include a scheme');
    const publicUrl = await runCheck(['--commit', NEW], { PUBLIC_APP_URL: 'tasks.example.com' });
    expect(publicUrl.code).toBe(2);
    expect(publicUrl.stderr).toContain('PUBLIC_APP_URL must include a scheme');
    const ftp = await runCheck(['--commit', NEW], { ROLLOUT_HEALTH_URL: 'ftp://tasks.example.com' });
    expect(ftp.code).toBe(2);
    expect(h.hits).toBe(0);
  });

  it('exits 2 without a commit or without any URL', async () => {
    const noCommit = await runCheck([], { ROLLOUT_HEALTH_URL: 'https://tasks.example.com' });
    expect(noCommit.code).toBe(2);
    expect(noCommit.stderr).toMatch(/--commit <sha> or set EXPECTED_COMMIT/);
    const noUrl = await runCheck(['--commit', NEW]);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/ROLLOUT_HEALTH_URL/);
  });
});

describe('rollout check options', () => {
  it('defaults to 30 polls every 20 s (ten minutes)', () => {
    const o = resolveOptions(['--commit', NEW], { PUBLIC_APP_URL: 'https://tasks.example.com/' });
    expect(o).toMatchObject({ healthUrl: 'https://tasks.example.com/api/health', attempts: 30, intervalMs: 20_000 });
    expect(o.attempts * o.intervalMs).toBe(10 * 60_000);
  });

  it('takes the commit as a bare argument and --max-attempts as an alias', () => {
    const o = resolveOptions([NEW, '--max-attempts', '3', '--interval-ms', '40'], { ROLLOUT_HEALTH_URL: 'http://127.0.0.1:1' });
    expect(o).toMatchObject({ expectedCommit: NEW, attempts: 3, intervalMs: 40, healthUrl: 'http://127.0.0.1:1/api/health' });
    expect(() => resolveOptions([NEW, OLD], { ROLLOUT_HEALTH_URL: 'http://127.0.0.1:1' })).toThrow(/unexpected argument/);
  });

  it('parses durations and rejects nonsense', () => {
    expect(parseDuration('20s', 'x')).toBe(20_000);
    expect(parseDuration('250ms', 'x')).toBe(250);
    expect(parseDuration('0.5', 'x')).toBe(500);
    expect(parseDuration('2m', 'x')).toBe(120_000);
    expect(() => parseDuration('soon', '--interval')).toThrow(UsageError);
    expect(() => resolveOptions(['--commit', NEW, '--attempts', '0'], { PUBLIC_APP_URL: 'https://a.example' })).toThrow(/--attempts/);
    expect(() => resolveOptions(['--commit', NEW, '--bogus', '1'], { PUBLIC_APP_URL: 'https://a.example' })).toThrow(/unknown flag/);
  });

  it('builds the health URL from a base with or without a path', () => {
    expect(healthUrlFrom('https://example.com/app/', 'X')).toBe('https://example.com/app/api/health');
    expect(healthUrlFrom('https://example.com/api/health', 'X')).toBe('https://example.com/api/health');
    expect(() => healthUrlFrom('example.com', 'ROLLOUT_HEALTH_URL')).toThrow(/ROLLOUT_HEALTH_URL must include a scheme/);
    expect(() => healthUrlFrom('https://', 'X')).toThrow(UsageError);
  });

  it('matches commits exactly or by abbreviation, never by a different SHA', () => {
    expect(sameCommit(NEW, NEW.toUpperCase())).toBe(true);
    expect(sameCommit(NEW, NEW.slice(0, 7))).toBe(true);
    expect(sameCommit(NEW.slice(0, 12), NEW)).toBe(true);
    expect(sameCommit(NEW, OLD)).toBe(false);
    expect(sameCommit(NEW, NEW.slice(0, 6))).toBe(false);
    expect(sameCommit('', NEW)).toBe(false);
  });
});
