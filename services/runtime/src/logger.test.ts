import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { prettyLogs } from './logger.ts';

const node = new URL('../../../node_modules/.bin/node', import.meta.url).pathname;

describe('logger', () => {
  it('is pretty only for a terminal outside production', () => {
    expect(prettyLogs({ RUNTIME_ENV: 'development' }, { isTTY: true })).toBe(true);
    expect(prettyLogs({ RUNTIME_ENV: 'development' }, { isTTY: false })).toBe(false);
    expect(prettyLogs({ RUNTIME_ENV: 'development' }, {})).toBe(false);
    expect(prettyLogs({ RUNTIME_ENV: 'production' }, { isTTY: true })).toBe(false);
  });

  it('prints readable lines through pino-pretty (a request as one line), JSON otherwise', () => {
    const script = (pretty: boolean) => `
      const { createLogger } = await import(${JSON.stringify(new URL('./logger.ts', import.meta.url).pathname)});
      const log = createLogger('gateway', 'info', { pretty: ${pretty} });
      log.info({ req: { method: 'GET', url: '/api/tasks' }, res: { statusCode: 200 }, responseTime: 4 }, 'request completed');
      log.warn('TOTP_ENCRYPTION_KEY is unset');`;
    const run = (pretty: boolean) => spawnSync(node, ['--input-type=module', '-e', script(pretty)], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' } });
    const pretty = run(true);
    expect(pretty.status, pretty.stderr).toBe(0);
    const lines = pretty.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/INFO.*\[gateway\] GET \/api\/tasks → 200 in 4 ms request completed$/);
    expect(lines[1]).toMatch(/WARN.*\[gateway\] TOTP_ENCRYPTION_KEY is unset$/);
    const json = run(false);
    expect(json.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['request completed', 'TOTP_ENCRYPTION_KEY is unset']);
  });
});
