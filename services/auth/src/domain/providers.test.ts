import { describe, expect, it } from 'vitest';
import { configuredProviders } from '@tasksvc/runtime';
import { testConfig } from '../../../../tools/testenv/index.ts';
import { buildProviders, providerInfos, resolvedProvider } from './providers.ts';

describe('buildProviders', () => {
  it('none without variables', () => {
    expect(buildProviders(testConfig())).toEqual([]);
  });

  it('one provider per configured kind, ids equal to the callback path segments, in the spec order', () => {
    const config = testConfig({
      CODEHOST_CLIENT_ID: 'a', CODEHOST_CLIENT_SECRET: 'a',
      CHAT_CLIENT_ID: 'b', CHAT_CLIENT_SECRET: 'b',
      SEARCH_CLIENT_ID: 'c', SEARCH_CLIENT_SECRET: 'c',
      CONSUMER_ACCOUNT_CLIENT_ID: 'd', CONSUMER_ACCOUNT_CLIENT_SECRET: 'd',
      OIDC_CLIENT_ID: 'e', OIDC_CLIENT_SECRET: 'e', OIDC_ISSUER: 'https://id.example.test',
    });
    expect(providerInfos(config).map((p) => p.id)).toEqual(['codehost', 'chat', 'search', 'consumer-account', 'oidc']);
    expect(providerInfos(config).map((p) => p.id)).toEqual(configuredProviders(config));
  });

  it('pins the consumer-account kind to the consumers tenant', () => {
    const p = resolvedProvider(buildProviders(testConfig({ CONSUMER_ACCOUNT_CLIENT_ID: 'd', CONSUMER_ACCOUNT_CLIENT_SECRET: 'd' }))[0]!) as unknown as { authorization: { url: string }; token: string };
    expect(p.authorization.url).toBe('https://login.microsoftonline.com/consumers/oauth2/v2.0/authorize');
    expect(p.token).toBe('https://login.microsoftonline.com/consumers/oauth2/v2.0/token');
  });

  it('adds the development provider `npm start` runs as an ordinary OIDC provider (id dev, prompt=login)', () => {
    const config = { ...testConfig(), devSignIn: { issuer: 'http://127.0.0.1:4555', clientId: 'task-service-development', clientSecret: 's3cret' } };
    expect(providerInfos(config)).toEqual([{ id: 'dev', name: 'Development sign-in', type: 'oidc' }]);
    const p = resolvedProvider(buildProviders(config)[0]!) as unknown as { issuer: string; clientId: string; checks: string[]; authorization: { params: Record<string, string> } };
    expect(p).toMatchObject({ issuer: 'http://127.0.0.1:4555', clientId: 'task-service-development', checks: ['pkce', 'state', 'nonce'] });
    expect(p.authorization.params).toEqual({ scope: 'openid email profile', prompt: 'login' });
  });
});
