// The Unix socket protocol and the web component, both against a real core daemon
// (running in its own network namespace) and the real CLI entry points.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createConnection } from 'node:net';
import { until } from '../../../tools/testenv/wait.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REQUEST_BYTES } from '../src/socket.ts';
import { CLI, NODE, createBed, freePort, netnsUnavailable, startCore, type Bed, type CoreProc } from './helpers/netns.ts';

const skip = netnsUnavailable();
if (skip) console.warn(`\n!!! firewall socket/web tests SKIPPED: ${skip}\n`);

const PASSWORD = 'correct horse battery staple';


function rawRequest(path: string, body: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ path, allowHalfOpen: true });
    let out = '';
    sock.on('connect', () => sock.end(body));
    sock.on('data', (c: Buffer) => (out += c.toString()));
    sock.on('error', (e) => (out ? resolve(out) : reject(e)));
    sock.on('close', () => resolve(out));
  });
}

describe.skipIf(!!skip)('core socket and web component', () => {
  let bed: Bed;
  let core: CoreProc;
  let web: ChildProcess;
  let base: string;

  beforeAll(async () => {
    bed = createBed('w');
    const { writeConfig } = await import('./helpers/netns.ts');
    const file = writeConfig(bed, { acceptance: { enabled: true, duration: 60 } });
    process.env.FIREWALL_SOCKET_GROUP = 'daemon';
    core = await startCore(bed, file);
    delete process.env.FIREWALL_SOCKET_GROUP;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    web = spawn(NODE, [CLI, 'web', '--config', file], { env: { ...process.env, FIREWALL_WEB_PORT: String(port), FIREWALL_WEB_HOST: '127.0.0.1', FIREWALL_WEB_PASSWORD: PASSWORD }, stdio: 'ignore' });
    for (let i = 0; i < 200; i++) {
      try {
        if ((await fetch(`${base}/healthz`)).ok) break;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    web?.kill('SIGKILL');
    await core?.stop();
    bed?.destroy();
  });

  describe('socket', () => {
    it('is mode 0660 and owned by the configured group', () => {
      const st = statSync(core.socket);
      expect(st.mode & 0o777).toBe(0o660);
      expect(st.gid).toBe(1); // "daemon" is gid 1 on Debian
    });

    it('answers {success, data} and {success:false, error} in the easywall shape', async () => {
      const status = await core.req('GET_STATUS');
      expect(status.success).toBe(true);
      expect(status.data).toMatchObject({ active: true, acceptance: 'accepted', has_pending: false });
      expect(await core.req('NO_SUCH_THING')).toEqual({ success: false, code: 'UNKNOWN_REQUEST', error: 'unknown request type: NO_SUCH_THING' });
      expect(JSON.parse(await rawRequest(core.socket, '{not json'))).toEqual({ success: false, code: 'BAD_REQUEST', error: 'request is not valid JSON' });
      const opts = await core.req('GET_OPTIONS');
      expect(opts.data).toMatchObject({ acceptance: { enabled: true, duration: 60 }, firewall: { syn_flood_limit: 100 } });
      const rules = await core.req('GET_RULES');
      expect(rules.data).toMatchObject({ current: { tcp: [{ port: '22', ssh: true }, { port: '8080', ssh: false }], blacklist: [] }, staged: { udp: [] } });
    });

    it('keeps rules.json, the version cache and audit.log in the configured directories', () => {
      const rules = JSON.parse(readFileSync(join(bed.dir, 'data', 'rules.json'), 'utf8'));
      expect(Object.keys(rules)).toEqual(expect.arrayContaining(['current', 'staged', 'backup']));
      const version = JSON.parse(readFileSync(join(bed.dir, 'data', 'version.json'), 'utf8'));
      expect(Object.keys(version).sort()).toEqual(['checked_at', 'current', 'latest', 'release_url', 'update_available']);
      const audit = readFileSync(join(bed.dir, 'log', 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(audit[0]).toMatchObject({ action: 'apply_started', detail: 'first start', actor: 'system' });
      expect(statSync(join(bed.dir, 'log', 'audit.log')).mode & 0o777).toBe(0o640);
    });

    it('refuses to start when data_dir is not writable', () => {
      const file = join(bed.dir, 'unwritable.json');
      writeFileSync(file, JSON.stringify({ socket_path: join(bed.dir, 'x.sock'), data_dir: join(core.configFile, 'data'), log_dir: join(bed.dir, 'log') }));
      const r = spawnSync('ip', ['netns', 'exec', bed.host, NODE, CLI, 'core', '--config', file], { encoding: 'utf8', timeout: 20_000 });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain('data_dir');
    });

    it('SAVE_OPTIONS validates, writes the config file and reloads; paths cannot be changed', async () => {
      const bad = await core.req('SAVE_OPTIONS', { options: { firewall: { icmp_flood_connection_limit: 5000 } } });
      expect(bad.success).toBe(false);
      expect(bad.error).toContain('firewall.icmp_flood_connection_limit');
      expect((await core.req('SAVE_OPTIONS', { options: { socket_path: '/tmp/x' } })).success).toBe(false);
      const ok = await core.req('SAVE_OPTIONS', { options: { firewall: { icmp_flood_connection_limit: 42 } } });
      expect(ok.success).toBe(true);
      expect(JSON.parse(readFileSync(core.configFile, 'utf8')).firewall.icmp_flood_connection_limit).toBe(42);
      expect(bed.inHost(['nft', 'list', 'chain', 'inet', 'task_firewall', 'input'])).toContain('limit rate over 42/second');
      expect((await core.req('GET_OPTIONS')).data).toMatchObject({ acceptance: { duration: 60 }, firewall: { icmp_flood_connection_limit: 42 } });
      // A ruleset change like any other: pending until confirmed.
      expect((await core.req('GET_STATUS')).data).toMatchObject({ acceptance: 'pending' });
      expect((await core.req('ACCEPT')).success).toBe(true);
    });

    it('EXPORT_RULES / IMPORT_RULES round-trip the staged rules (validated)', async () => {
      const exported = await core.req('EXPORT_RULES');
      expect(exported.data).toMatchObject({ tcp: [{ port: '22' }, { port: '8080' }] });
      const next = { ...(exported.data as object), udp: [{ port: '53', description: 'dns', ssh: false }] };
      expect((await core.req('IMPORT_RULES', { rules: { ...next, bogus: [] } })).success).toBe(false);
      expect((await core.req('IMPORT_RULES', { rules: next })).data).toMatchObject({ udp: [{ port: '53' }] });
      expect((await core.req('GET_RULES')).data).toMatchObject({ staged: { udp: [{ port: '53' }] }, current: { udp: [] } });
      expect((await core.req('GET_STATUS')).data).toMatchObject({ staged_changes: true });
    });

    it('validates staged rules and caps request size', async () => {
      expect((await core.req('SAVE_RULES', { rule_type: 'blacklist', rules: ['999.1.1.1'] })).success).toBe(false);
      expect((await core.req('SAVE_RULES', { rule_type: 'tcp', rules: [{ port: '70000' }] })).success).toBe(false);
      expect((await core.req('SAVE_RULES', { rule_type: 'bogus', rules: [] })).success).toBe(false);
      const reply = await rawRequest(core.socket, Buffer.alloc(MAX_REQUEST_BYTES + 1024, 0x20));
      expect(JSON.parse(reply)).toMatchObject({ success: false, error: expect.stringContaining('larger than') });
      expect((await core.req('GET_STATUS')).success).toBe(true);
    });
  });

  describe('web', () => {
    const json = (res: Response) => res.json() as Promise<{ success: boolean; data?: any; error?: string }>; // eslint-disable-line @typescript-eslint/no-explicit-any
    let cookie = '';
    let csrf = '';
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}${path}`, {
        method,
        headers: { cookie, ...(method === 'GET' ? {} : { 'content-type': 'application/json', 'x-csrf-token': csrf }), ...headers },
        body: method === 'GET' ? undefined : JSON.stringify(body ?? {}),
      });

    it('serves the UI and refuses the API without login', async () => {
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('type="password"');
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect((await fetch(`${base}/api/status`)).status).toBe(401);
      expect((await fetch(`${base}/api/apply`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
    });

    it('login: wrong password 401, right password sets an HttpOnly SameSite=Strict cookie', async () => {
      const bad = await fetch(`${base}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: 'nope' }) });
      expect(bad.status).toBe(401);
      const ok = await fetch(`${base}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: PASSWORD }) });
      expect(ok.status).toBe(200);
      const set = ok.headers.get('set-cookie') ?? '';
      expect(set).toMatch(/HttpOnly/);
      expect(set).toMatch(/SameSite=Strict/);
      cookie = set.split(';')[0]!;
      csrf = (await json(ok)).data.csrf_token;
      expect(csrf.length).toBeGreaterThan(20);
    });

    it('CSRF: state changes need the session token and a JSON body', async () => {
      expect((await call('POST', '/api/apply', {}, { 'x-csrf-token': 'forged' })).status).toBe(403);
      const form = await fetch(`${base}/api/apply`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=b' });
      expect(form.status).toBe(415);
      expect((await json(await call('GET', '/api/status'))).data.has_pending).toBe(false);
    });

    it('edit rules, apply (pending with countdown), confirm, audit log', async () => {
      const saved = await call('PUT', '/api/rules/blacklist', { rules: ['203.0.113.9', '198.51.100.0/24'] });
      expect(saved.status).toBe(200);
      const bad = await call('PUT', '/api/rules/whitelist', { rules: ['not-an-ip'] });
      expect(bad.status).toBe(400);
      expect((await json(bad)).error).toContain('whitelist');
      const rules = await json(await call('GET', '/api/rules'));
      expect(rules.data.staged.blacklist).toEqual(['203.0.113.9', '198.51.100.0/24']);

      const applied = await json(await call('POST', '/api/apply'));
      expect(applied.success).toBe(true);
      const status = await json(await call('GET', '/api/status'));
      expect(status.data).toMatchObject({ acceptance: 'pending', has_pending: true });
      expect(status.data.pending.remaining_seconds).toBeGreaterThan(50);
      expect(status.data.pending.remaining_seconds).toBeLessThanOrEqual(60);
      expect(bed.inHost(['nft', 'list', 'set', 'inet', 'task_firewall', 'blacklist-v4'])).toContain('203.0.113.9');

      const again = await call('POST', '/api/apply');
      expect(again.status).toBe(400);
      expect((await json(again)).error).toBe('an apply is already in progress');

      const confirmed = await json(await call('POST', '/api/confirm'));
      expect(confirmed.data).toMatchObject({ acceptance: 'accepted', has_pending: false });

      const audit = await json(await call('GET', '/api/audit'));
      const actions = (audit.data as { action: string; actor: string }[]).filter((e) => e.actor === 'web').map((e) => e.action);
      expect(actions).toEqual(expect.arrayContaining(['rules_saved', 'apply_started', 'apply_accepted']));
      for (const e of audit.data) expect(Object.keys(e)).toEqual(expect.arrayContaining(['time', 'action', 'detail', 'actor']));
    });

    it('logout ends the session', async () => {
      expect((await call('POST', '/api/logout')).status).toBe(200);
      expect((await call('GET', '/api/status')).status).toBe(401);
    });

    it('refuses to start without a password', () => {
      const env = { ...process.env, FIREWALL_WEB_PASSWORD: '', FIREWALL_WEB_PASSWORD_FILE: '' };
      const r = spawnSync(NODE, [CLI, 'web', '--config', core.configFile], { env, encoding: 'utf8', timeout: 20_000 });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain('FIREWALL_WEB_PASSWORD');
    });
  });

  describe('exposure (issue 19.15)', () => {
    const spawned: ChildProcess[] = [];
    afterAll(() => {
      for (const p of spawned) p.kill('SIGKILL');
    });

    function startWeb(env: Record<string, string>, ns?: string) {
      const cmd = ns ? ['ip', 'netns', 'exec', ns, NODE, CLI, 'web', '--config', core.configFile] : [NODE, CLI, 'web', '--config', core.configFile];
      const p = spawn(cmd[0]!, cmd.slice(1), { env: { ...process.env, FIREWALL_WEB_HOST: '', FIREWALL_WEB_PASSWORD: PASSWORD, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout?.on('data', (c: Buffer) => (out += c.toString()));
      spawned.push(p);
      return until(() => out.includes('firewall web ready') && out, 'the web component to start');
    }

    /** One request with an explicit Host header (fetch does not let a caller set it). */
    function raw(url: string, opts: { method?: string; host?: string; body?: string } = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
      const u = new URL(url);
      const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, {
        method: opts.method ?? 'GET',
        headers: { ...(opts.host ? { host: opts.host } : {}), ...(opts.body ? { 'content-type': 'application/json' } : {}) },
        rejectUnauthorized: false,
      });
      return new Promise((resolve, reject) => {
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        req.on('error', reject);
        req.end(opts.body);
      });
    }

    it('listens on 127.0.0.1 unless FIREWALL_WEB_HOST says otherwise', async () => {
      const port = await freePort();
      const out = await startWeb({ FIREWALL_WEB_PORT: String(port) }, bed.host);
      expect(out).toContain('"host":"127.0.0.1"');
      const listening = bed.inHost(['ss', '-ltnH', `sport = :${port}`]);
      expect(listening).toContain(`127.0.0.1:${port}`);
      expect(listening).not.toMatch(new RegExp(`(0\\.0\\.0\\.0|\\*|\\[::\\]):${port}`));
    });

    it('refuses a Host header that names another site (DNS rebinding); IP literals and localhost pass', async () => {
      expect((await raw(`${base}/api/session`, { host: 'rebind.attacker.test' })).status).toBe(421);
      expect((await raw(`${base}/`, { host: `rebind.attacker.test:${new URL(base).port}` })).status).toBe(421);
      expect((await raw(`${base}/api/session`, { host: `localhost:${new URL(base).port}` })).status).toBe(200);
      expect((await raw(`${base}/api/session`)).status).toBe(200);
      const port = await freePort();
      await startWeb({ FIREWALL_WEB_PORT: String(port), FIREWALL_WEB_ALLOWED_HOSTS: 'fw.internal.test' });
      expect((await raw(`http://127.0.0.1:${port}/api/session`, { host: 'fw.internal.test' })).status).toBe(200);
    });

    it('over TLS the session cookie is Secure; over plain HTTP it is not (unless FIREWALL_WEB_SECURE_COOKIE)', async () => {
      const key = join(bed.dir, 'web.key');
      const cert = join(bed.dir, 'web.crt');
      const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', key, '-out', cert], { encoding: 'utf8' });
      expect(gen.status, gen.stderr).toBe(0);
      const login = JSON.stringify({ password: PASSWORD });
      const tlsPort = await freePort();
      await startWeb({ FIREWALL_WEB_PORT: String(tlsPort), FIREWALL_WEB_TLS_CERT_FILE: cert, FIREWALL_WEB_TLS_KEY_FILE: key });
      const secure = await raw(`https://127.0.0.1:${tlsPort}/api/login`, { method: 'POST', body: login });
      expect(secure.status).toBe(200);
      expect(String(secure.headers['set-cookie'])).toMatch(/; Secure/);
      const plain = await raw(`${base}/api/login`, { method: 'POST', body: login });
      expect(String(plain.headers['set-cookie'])).not.toMatch(/Secure/);
      const proxied = await freePort();
      await startWeb({ FIREWALL_WEB_PORT: String(proxied), FIREWALL_WEB_SECURE_COOKIE: 'true' });
      expect(String((await raw(`http://127.0.0.1:${proxied}/api/login`, { method: 'POST', body: login })).headers['set-cookie'])).toMatch(/; Secure/);
    });
  });
});
