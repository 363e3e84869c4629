import { describe, expect, it } from 'vitest';
import { quietLogger, testConfig } from './testenv/index.ts';
import { exposedDevSignInWarning, startDevSignIn } from './dev-signin.ts';

describe('development sign-in provider (#56.4)', () => {
  it('listens on loopback only, even when the app has another host name and HOST is every interface', async () => {
    // tasks.lan is never contacted: the provider only names its issuer
    const config = testConfig({ PUBLIC_APP_URL: 'http://tasks.lan:3000', AUTH_CALLBACK_URL: 'http://tasks.lan:3000', HOST: '0.0.0.0' });
    const dev = await startDevSignIn(config, quietLogger());
    try {
      expect(new URL(dev.issuer).hostname).toBe('127.0.0.1');
      const res = await fetch(`${dev.issuer}/.well-known/openid-configuration`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { issuer: string }).issuer).toBe(dev.issuer);
    } finally {
      await dev.stop();
    }
  });
});

describe('development sign-in warning (#56.4)', () => {
  it('warns loudly when the app listens beyond loopback, not when it stays on this machine', () => {
    expect(exposedDevSignInWarning('0.0.0.0')).toMatch(/HOST=0\.0\.0\.0 WHILE DEVELOPMENT SIGN-IN IS ON/);
    expect(exposedDevSignInWarning('192.168.1.5')).toMatch(/HOST=127\.0\.0\.1/);
    for (const local of ['127.0.0.1', 'localhost', '::1']) expect(exposedDevSignInWarning(local), local).toBeUndefined();
  });
});
