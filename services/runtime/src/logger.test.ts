import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger, isoMillis, prettyLogs } from './logger.ts';

const node = new URL('../../../node_modules/.bin/node', import.meta.url).pathname;

describe('logger', () => {
  it('writes each line\'s time as toISOString does, across seconds, minutes and years', () => {
    const starts = [Date.UTC(2026, 11, 31, 23, 59, 58), Date.UTC(2024, 1, 29, 12, 0, 0), 0, Date.now()];
    for (const start of starts) for (let t = start; t < start + 3000; t += 7) expect(isoMillis(t)).toBe(new Date(t).toISOString());
    // going back in time (a clock step) too
    for (const t of [Date.UTC(2030, 0, 1), Date.UTC(2020, 5, 5, 5, 5, 5, 5), Date.UTC(2030, 0, 1, 0, 0, 0, 999)]) expect(isoMillis(t)).toBe(new Date(t).toISOString());
  });

  it('is pretty only for a terminal outside production', () => {
    expect(prettyLogs({ RUNTIME_ENV: 'development' }, { isTTY: true })).toBe(true);
    expect(prettyLogs({ RUNTIME_ENV: 'development' }, { isTTY: false })).toBe(false);
    expect(prettyLogs({ RUNTIME_ENV: 'development' }, {})).toBe(false);
    expect(prettyLogs({ RUNTIME_ENV: 'production' }, { isTTY: true })).toBe(false);
  });

  it('censors secrets one level down in a line (a child logger\'s too), without touching the logged objects', () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    const log = createLogger('gateway', 'info', { destination });
    const headers = { authorization: 'Bearer ts_live_abc', cookie: 'sid=s3cr3t', accept: 'text/html' };
    const body = { title: 'pay rent', password: 'hunter2' };
    const err = Object.assign(new Error('refused', { cause: new Error('inner') }), { secret: 'whsec_x', status: 401 });
    log.child({ requestId: 'r1' }).warn({ headers, body, err, count: 3 }, 'a line');
    log.info({ req: { method: 'GET', url: '/api/tasks' } }, 'a plain line');
    const [line, plain] = lines;
    expect(line).toMatchObject({
      msg: 'a line',
      count: 3,
      requestId: 'r1',
      headers: { authorization: '[redacted]', cookie: '[redacted]', accept: 'text/html' },
      body: { title: 'pay rent', password: '[redacted]' },
      err: { type: 'Error', message: 'refused: inner', secret: '[redacted]', status: 401 },
    });
    expect(String((line!.err as { stack: string }).stack)).toContain('refused');
    expect(JSON.stringify(lines)).not.toMatch(/ts_live_abc|s3cr3t|hunter2|whsec_x/);
    expect(plain).toMatchObject({ msg: 'a plain line', req: { method: 'GET', url: '/api/tasks' } });
    // what the caller logged is unchanged
    expect(headers.authorization).toBe('Bearer ts_live_abc');
    expect(body.password).toBe('hunter2');
    expect(err.secret).toBe('whsec_x');
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

  it('writes stdout in chunks, yet a lone line of a process that goes on arrives, and nothing is lost at process.exit', async () => {
    const logger = JSON.stringify(new URL('./logger.ts', import.meta.url).pathname);
    // a lone line, then the process idles (until killed): the line must come without an exit
    const idle = spawn(node, ['--input-type=module', '-e', `const { createLogger } = await import(${logger}); createLogger('tasks').info('alone'); setInterval(() => {}, 1000);`]);
    try {
      const first = await new Promise<string>((resolve, reject) => {
        let out = '';
        idle.stdout.on('data', (d: Buffer) => (out += d.toString()).includes('\n') && resolve(out));
        idle.once('exit', (code) => reject(new Error(`exited (${code}) before writing: ${out}`)));
      });
      expect((JSON.parse(first) as { msg: string }).msg).toBe('alone');
    } finally {
      idle.kill();
    }
    // a burst of several chunks (the flush finds one being written), then the process idles: every line comes
    const quiet = spawn(node, ['--input-type=module', '-e', `const { createLogger } = await import(${logger}); const log = createLogger('tasks'); for (let i = 0; i < 300; i++) log.info({ i }, 'line'); setInterval(() => {}, 1000);`]);
    try {
      const all = await new Promise<string>((resolve, reject) => {
        let out = '';
        quiet.stdout.on('data', (d: Buffer) => (out += d.toString()).split('\n').length > 300 && resolve(out));
        quiet.once('exit', (code) => reject(new Error(`exited (${code}) before writing: ${out}`)));
      });
      expect(all.trim().split('\n').map((l) => (JSON.parse(l) as { i: number }).i)).toEqual(Array.from({ length: 300 }, (_, i) => i));
    } finally {
      quiet.kill();
    }
    // a burst of several chunks, then process.exit at once: every line, in order
    const burst = spawnSync(node, ['--input-type=module', '-e', `const { createLogger } = await import(${logger}); const log = createLogger('tasks'); for (let i = 0; i < 500; i++) log.info({ i }, 'line'); process.exit(3);`], { encoding: 'utf8' });
    expect(burst.status, burst.stderr).toBe(3);
    expect(burst.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { i: number }).i)).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });
});
