import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * The real logger (JSON on stdout) behind the real gateway: run in a child process so its stdout
 * is what is checked, exactly as an operator's log collector would see it.
 */
const script = `
import { createLogger, createMemoryBus, createPool, loadConfig } from '@tasksvc/runtime';
import { buildGateway } from './src/app.ts';
const log = createLogger('gateway', 'info');
const config = loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', AUTH_SECRET: 'test-secret-test-secret-test-secret-0123', AUTH_TRUST_HOST: 'true', RUNTIME_ENV: 'test', DISABLE_UPDATE_CHECK: 'true' });
const pool = createPool(config.DATABASE_URL, log);
const app = await buildGateway({ config, bus: createMemoryBus(log), pool, log, routes: [] });
await app.inject({ method: 'GET', url: '/api/calendar/feedtoken0123456789abcdef.ics' });
await app.inject({ method: 'GET', url: '/api/%63alendar/feedtokenSPELLEDOTHERWISE01.ics' });
await app.inject({ method: 'GET', url: '/api/auth/callback/oidc?code=oauthcode0123456789&state=st4te0123456789' });
await app.close();
await pool.end();
`;

describe('request log lines', () => {
  it('never contain the iCal feed token (under any spelling of its path) or OAuth codes', () => {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url).pathname, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    const lines = run.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { req?: { url: string } });
    const urls = lines.flatMap((l) => (l.req ? [l.req.url] : []));
    expect(urls.filter((u) => u === '/api/calendar/[redacted].ics')).toHaveLength(2);
    expect(urls).toContain('/api/auth/callback/oidc?code=[redacted]&state=[redacted]');
    for (const secret of ['feedtoken0123456789abcdef', 'feedtokenSPELLEDOTHERWISE01', 'oauthcode0123456789', 'st4te0123456789']) expect(run.stdout).not.toContain(secret);
  });
});
