import { useNavigate, useSearchParams } from '@solidjs/router';
import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, get, post } from '../lib/api.ts';
import { session } from '../lib/session.ts';
import { Spinner } from '../components/ui.tsx';

interface Provider {
  id: string;
  name: string;
  type: string;
}

/** Friendly names for the provider kinds of the spec; Auth.js ids are the callback path segments. */
const LABELS: Record<string, string> = {
  codehost: 'Code hosting',
  chat: 'Chat',
  search: 'Search account',
  'consumer-account': 'Personal account',
  oidc: 'Single sign-on (OpenID Connect)',
};

const ERRORS: Record<string, string> = {
  OAuthSignin: 'The sign-in could not be started. Please try again.',
  OAuthCallback: 'The identity provider returned an error. Please try again.',
  OAuthAccountNotLinked: 'This e-mail address is already linked to another sign-in method.',
  AccessDenied: 'Access was denied.',
  Configuration: 'Sign-in is misconfigured on this server. Ask the operator to check the provider settings.',
  Verification: 'The sign-in link expired. Please try again.',
};

/** Only a local path may be a post-login destination (no open redirect). */
function safeNext(next: string | undefined): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/dashboard';
}

export default function Login(): JSX.Element {
  const [params] = useSearchParams<{ next?: string; callbackUrl?: string; error?: string; login_hint?: string }>();
  const navigate = useNavigate();
  // `callbackUrl` is what the gateway's page gate and Auth.js use; `next` is the app's own redirect.
  const next = () => safeNext(params.next ?? params.callbackUrl);
  // A login hint (e.g. from an invitation link) is passed on to the identity provider.
  const hint = () => (params.login_hint ? `?login_hint=${encodeURIComponent(params.login_hint)}` : '');
  const [providers] = createResource(async () => {
    const list = await get<Record<string, Provider>>('/api/auth/providers').catch(() => ({}) as Record<string, Provider>);
    // Passkeys have their own button below; everything else is an OAuth/OIDC provider.
    return Object.values(list ?? {}).filter((p) => p.type === 'oauth' || p.type === 'oidc');
  });
  const [csrf] = createResource(async () => (await get<{ csrfToken: string }>('/api/auth/csrf').catch(() => ({ csrfToken: '' }))).csrfToken);
  const [passkeyError, setPasskeyError] = createSignal('');
  const [passkeyBusy, setPasskeyBusy] = createSignal(false);

  // Already signed in (e.g. back button): go on.
  void session.refetch();

  async function passkeySignIn() {
    setPasskeyError('');
    setPasskeyBusy(true);
    try {
      const { startAuthentication } = await import('@simplewebauthn/browser');
      const { challengeId, options } = await post<{ challengeId: string; options: Record<string, unknown> }>('/api/auth/passkey/login/options');
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const response = await startAuthentication({ optionsJSON: options as any });
      await post('/api/auth/passkey/login/verify', { challengeId, response });
      await session.refetch();
      navigate(next(), { replace: true });
    } catch (err) {
      setPasskeyError(err instanceof ApiError ? err.message : err instanceof Error && err.name === 'NotAllowedError' ? 'The passkey prompt was cancelled.' : String((err as Error)?.message ?? err));
    } finally {
      setPasskeyBusy(false);
    }
  }

  return (
    <div class="auth-wrap">
      <main class="card auth-card" id="main">
        <div class="row" style={{ 'margin-bottom': '0.5rem' }}>
          <img src="/icon.svg" alt="" width="40" height="40" />
          <h1 style={{ margin: 0 }}>Task Service</h1>
        </div>
        <p class="muted">Sign in to see today's quest, your tasks and your streak.</p>
        <Show when={params.error}>
          <div class="banner error" role="alert">
            {ERRORS[params.error!] ?? 'Sign-in failed. Please try again.'}
          </div>
        </Show>
        <Show when={session.me()}>
          <div class="banner info">
            You are signed in as {session.me()!.email}. <a href={next()}>Continue</a>
          </div>
        </Show>
        <div class="providers">
          <Show when={!providers.loading} fallback={<Spinner />}>
            <For each={providers()} fallback={<div class="banner warn">No sign-in provider is configured. The operator must set at least one identity provider (for example OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET).</div>}>
              {(p) => (
                // Auth.js expects a real form POST with its CSRF token; the browser then follows the provider redirect.
                <form method="post" action={`/api/auth/signin/${encodeURIComponent(p.id)}${hint()}`}>
                  <input type="hidden" name="csrfToken" value={csrf() ?? ''} />
                  <input type="hidden" name="callbackUrl" value={next()} />
                  <button class="primary" type="submit" disabled={!csrf()} data-provider={p.id}>
                    Sign in with {LABELS[p.id] ?? p.name}
                  </button>
                </form>
              )}
            </For>
          </Show>
        </div>
        <Show when={typeof window.PublicKeyCredential === 'function'}>
          <div class="divider">or</div>
          <button type="button" style={{ width: '100%' }} onClick={() => void passkeySignIn()} disabled={passkeyBusy()} aria-busy={passkeyBusy()}>
            Sign in with a passkey
          </button>
          <Show when={passkeyError()}>
            <p class="error small" role="alert" style={{ color: 'var(--danger)', 'margin-top': '0.5rem' }}>
              {passkeyError()}
            </p>
          </Show>
        </Show>
        <p class="small muted" style={{ 'margin-top': '1.25rem' }}>
          <a href="/impressum" rel="external">
            Impressum
          </a>{' '}
          ·{' '}
          <a href="/datenschutz" rel="external">
            Datenschutz
          </a>
        </p>
      </main>
    </div>
  );
}
