import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { quietLogger } from './testenv/index.ts';
import { applyDevDefaults } from './dev-defaults.ts';

const dir = mkdtempSync(join(tmpdir(), 'dev-defaults-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const mode = (p: string) => statSync(p).mode & 0o777;

describe('the data folder of npm start', () => {
  it('is owner-only at every start, and so are the secrets in it, whatever mode they had (issue 56 #7)', async () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    // as an older version, a copy or a loose umask left them
    writeFileSync(join(data, 'auth-secret'), 'kept-secret-kept-secret-kept-secret-0000', { mode: 0o644 });
    writeFileSync(join(data, 'secrets-keyring'), 'dev:' + 'ab'.repeat(32), { mode: 0o664 });
    const env = { RUNTIME_ENV: 'development', DATA_DIR: data, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' };
    const { env: out } = await applyDevDefaults(env, quietLogger());
    expect(mode(data)).toBe(0o700);
    for (const f of ['auth-secret', 'secrets-keyring', 'totp-encryption-key', 'vapid-keys.json']) expect(mode(join(data, f)), f).toBe(0o600);
    // the secrets themselves are kept
    expect(out.AUTH_SECRET).toBe('kept-secret-kept-secret-kept-secret-0000');
    expect(readFileSync(join(data, 'secrets-keyring'), 'utf8')).toBe(out.SECRETS_KEYRING);
  });
});
