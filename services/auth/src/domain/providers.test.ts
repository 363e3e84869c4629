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
});
