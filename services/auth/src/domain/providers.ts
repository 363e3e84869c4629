import type { Provider } from '@auth/core/providers';
import Discord from '@auth/core/providers/discord';
import GitHub from '@auth/core/providers/github';
import Google from '@auth/core/providers/google';
import MicrosoftEntraID from '@auth/core/providers/microsoft-entra-id';
import type { Config } from '@tasksvc/runtime';

/** Provider ids are the callback path segments: `{AUTH_CALLBACK_URL}/api/auth/callback/<id>`. */
export type ProviderId = 'codehost' | 'chat' | 'search' | 'consumer-account' | 'oidc' | 'dev';

export interface ProviderInfo {
  id: ProviderId;
  name: string;
  type: 'oauth' | 'oidc';
}

/**
 * Consumer accounts all carry this tenant id in their tokens' issuer; the authorization and token
 * endpoints are pinned to the `consumers` tenant so work/school accounts cannot sign in.
 */
const CONSUMER_TENANT_ISSUER = 'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0';
const CONSUMER_BASE = 'https://login.microsoftonline.com/consumers/oauth2/v2.0';

/**
 * The Auth.js providers for the configured variables, in the spec's order. A kind appears only when
 * its variables are set (the generic OIDC one only when OIDC_ISSUER is set). Endpoints are explicit
 * where the provider publishes fixed ones, so starting a sign-in needs no discovery round trip.
 */
export function buildProviders(config: Config): Provider[] {
  const out: Provider[] = [];
  if (config.CODEHOST_CLIENT_ID && config.CODEHOST_CLIENT_SECRET) {
    out.push(GitHub({ id: 'codehost', name: 'Code host', clientId: config.CODEHOST_CLIENT_ID, clientSecret: config.CODEHOST_CLIENT_SECRET }));
  }
  if (config.CHAT_CLIENT_ID && config.CHAT_CLIENT_SECRET) {
    out.push(Discord({ id: 'chat', name: 'Chat', clientId: config.CHAT_CLIENT_ID, clientSecret: config.CHAT_CLIENT_SECRET }));
  }
  if (config.SEARCH_CLIENT_ID && config.SEARCH_CLIENT_SECRET) {
    out.push(
      Google({
        id: 'search',
        name: 'Search',
        clientId: config.SEARCH_CLIENT_ID,
        clientSecret: config.SEARCH_CLIENT_SECRET,
        issuer: 'https://accounts.google.com',
        authorization: { url: 'https://accounts.google.com/o/oauth2/v2/auth', params: { scope: 'openid email profile' } },
        token: 'https://oauth2.googleapis.com/token',
        userinfo: 'https://openidconnect.googleapis.com/v1/userinfo',
      }),
    );
  }
  if (config.CONSUMER_ACCOUNT_CLIENT_ID && config.CONSUMER_ACCOUNT_CLIENT_SECRET) {
    out.push(
      MicrosoftEntraID({
        id: 'consumer-account',
        name: 'Consumer account',
        clientId: config.CONSUMER_ACCOUNT_CLIENT_ID,
        clientSecret: config.CONSUMER_ACCOUNT_CLIENT_SECRET,
        issuer: CONSUMER_TENANT_ISSUER,
        authorization: { url: `${CONSUMER_BASE}/authorize`, params: { scope: 'openid profile email User.Read' } },
        token: `${CONSUMER_BASE}/token`,
        userinfo: 'https://graph.microsoft.com/oidc/userinfo',
      }),
    );
  }
  // Spec: setting OIDC_ISSUER activates the OIDC button; a missing client is a logged start warning.
  if (config.OIDC_ISSUER) out.push(oidcProvider('oidc', 'OpenID Connect', config.OIDC_ISSUER, config.OIDC_CLIENT_ID ?? '', config.OIDC_CLIENT_SECRET));
  // The development provider `npm start` runs (firstrun); `prompt=login` lets a person switch identity after signing out.
  if (config.devSignIn) out.push(oidcProvider('dev', 'Development sign-in', config.devSignIn.issuer, config.devSignIn.clientId, config.devSignIn.clientSecret, { prompt: 'login' }));
  return out;
}

function oidcProvider(id: ProviderId, name: string, issuer: string, clientId: string, clientSecret: string | undefined, params: Record<string, string> = {}): Provider {
  return {
    id,
    name,
    type: 'oidc',
    issuer,
    clientId,
    clientSecret,
    authorization: { params: { scope: 'openid email profile', ...params } },
    checks: ['pkce', 'state', 'nonce'],
    // Ask the userinfo endpoint: many providers keep email/name out of the ID token in the code flow.
    idToken: false,
    profile(profile: Record<string, unknown>) {
      const email = typeof profile.email === 'string' ? profile.email : null;
      return {
        id: String(profile.sub),
        email,
        name: typeof profile.name === 'string' ? profile.name : (typeof profile.preferred_username === 'string' ? profile.preferred_username : email),
        image: typeof profile.picture === 'string' ? profile.picture : null,
      };
    },
  };
}

/** A provider as Auth.js will use it: the built-in defaults with our options laid over them (shallow). */
export function resolvedProvider(p: Provider): Record<string, unknown> & { id: string; name: string; type: string } {
  const o = (typeof p === 'function' ? p() : p) as unknown as Record<string, unknown> & { id: string; name: string; type: string; options?: Record<string, unknown> };
  return { ...o, ...(o.options ?? {}) };
}

export function providerInfos(config: Config): ProviderInfo[] {
  return buildProviders(config).map((p) => {
    const o = resolvedProvider(p);
    return { id: o.id as ProviderId, name: o.name, type: o.type as 'oauth' | 'oidc' };
  });
}
