import { useNavigate, useSearchParams } from '@solidjs/router';
import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, credential, get, getOutsideTable, post, type BodyOf } from '../lib/api.ts';
import { session } from '../lib/session.ts';
import { Spinner } from '../components/ui.tsx';
import { sameOriginPath } from '../../../proto/src/local-path.ts';

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
  dev: 'Development sign-in',
};

const ERRORS: Record<string, string> = {
  OAuthSignin: 'The sign-in could not be started. Please try again.',
  OAuthCallback: 'The identity provider returned an error. Please try again.',
  OAuthAccountNotLinked: 'This e-mail address is already linked to another sign-in method.',
  AccessDenied: 'Access was denied.',
  Configuration: 'Sign-in is misconfigured on this server. Ask the operator to check the provider settings.',
  Verification: 'The sign-in link expired. Please try again.',
};

const NO_PASSKEY = 'No passkey was used. If you have not added a passkey for this site yet, sign in another way first and add one under Settings → Security.';

/** Only a normalised path on this site may be a post-login destination (the same rule as the server's). */
function safeNext(next: string | undefined): string {
  return sameOriginPath(next, window.location.origin) ?? '/dashboard';
}

/** The browser reports "no passkey for this site" and "prompt closed" alike (NotAllowedError): sign-in says both. */
function ceremonyError(err: unknown, notAllowed = 'The passkey prompt was cancelled.'): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error && err.name === 'NotAllowedError') return notAllowed;
  return String((err as Error)?.message ?? err);
}

export default function Login(): JSX.Element {
  const [params] = useSearchParams<{ next?: string; callbackUrl?: string; error?: string; login_hint?: string }>();
  const navigate = useNavigate();
  // `callbackUrl` is what the gateway's page gate and Auth.js use; `next` is the app's own redirect.
  const next = () => safeNext(params.next ?? params.callbackUrl);
  // A login hint (e.g. from an invitation link) is passed on to the identity provider.
  const hint = () => (params.login_hint ? `?login_hint=${encodeURIComponent(params.login_hint)}` : '');
  const [providers] = createResource(async () => {
    const list = await getOutsideTable<Record<string, Provider>>('/api/auth/providers').catch(() => ({}));
    // Passkeys have their own button below; everything else is an OAuth/OIDC provider.
    return Object.values(list ?? {}).filter((p) => p.type === 'oauth' || p.type === 'oidc');
  });
  const [csrf] = createResource(async () => (await getOutsideTable<{ csrfToken: string }>('/api/auth/csrf').catch(() => ({ csrfToken: '' }))).csrfToken);
  const [passkeyError, setPasskeyError] = createSignal('');
  const [passkeyBusy, setPasskeyBusy] = createSignal(false);
  // Passkey-only accounts (SIGNUP_WITH_PASSKEY): offered only when the server has them switched on.
  const [signup] = createResource(async () => get('/api/auth/passkey/signup').catch(() => ({ enabled: false, inviteRequired: false })));
  const [signupName, setSignupName] = createSignal('');
  const [inviteCode, setInviteCode] = createSignal('');
  const [signupError, setSignupError] = createSignal('');

  // Already signed in (e.g. back button): go on.
  void session.refetch();

  async function passkeySignIn() {
    setPasskeyError('');
    setPasskeyBusy(true);
    try {
      const { startAuthentication } = await import('@simplewebauthn/browser');
      const { challengeId, options } = await post('/api/auth/passkey/login/options');
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const response = await startAuthentication({ optionsJSON: options as any });
      await post('/api/auth/passkey/login/verify', { body: { challengeId, response: credential(response) } });
      await session.refetch();
      navigate(next(), { replace: true });
    } catch (err) {
      setPasskeyError(ceremonyError(err, NO_PASSKEY));
    } finally {
      setPasskeyBusy(false);
    }
  }

  async function passkeySignUp(e: SubmitEvent) {
    e.preventDefault();
    setSignupError('');
    setPasskeyBusy(true);
    try {
      const { startRegistration } = await import('@simplewebauthn/browser');
      const body: BodyOf<'POST', '/api/auth/passkey/signup/options'> = { name: signupName().trim(), ...(signup()?.inviteRequired ? { inviteCode: inviteCode().trim() } : {}) };
      const { challengeId, options } = await post('/api/auth/passkey/signup/options', { body });
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const response = await startRegistration({ optionsJSON: options as any });
      await post('/api/auth/passkey/signup/verify', { body: { challengeId, response: credential(response) } });
      await session.refetch();
      navigate(next(), { replace: true });
    } catch (err) {
      setSignupError(ceremonyError(err));
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
            You are signed in as {session.me()!.email || session.me()!.name}. <a href={next()}>Continue</a>
          </div>
        </Show>
        <div class="providers">
          <Show when={!providers.loading} fallback={<Spinner />}>
            <For
              each={providers()}
              fallback={
                <Show when={!signup.loading && !signup()?.enabled}>
                  <div class="banner warn">No sign-in provider is configured. The operator must set at least one identity provider (for example OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET).</div>
                </Show>
              }
            >
              {(p) => (
                // Auth.js expects a real form POST with its CSRF token; the browser then follows the provider redirect.
                <form method="post" action={`/api/auth/signin/${encodeURIComponent(p.id)}${hint()}`}>
                  <input type="hidden" name="csrfToken" value={csrf() ?? ''} />
                  <input type="hidden" name="callbackUrl" value={next()} />
                  <button class="primary" type="submit" disabled={!csrf()} data-provider={p.id}>
                    Sign in with {LABELS[p.id] ?? p.name}
                  </button>
                  {/* The provider `npm start` runs locally; it never exists in production. */}
                  <Show when={p.id === 'dev'}>
                    <p class="small muted" data-testid="dev-signin-note">
                      Development only: choose any name and e-mail address, no password. Runs with <code>npm start</code> and is off in production.
                    </p>
                  </Show>
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
          <Show when={signup()?.enabled}>
            <div class="divider">new here?</div>
            <form class="stack" onSubmit={(e) => void passkeySignUp(e)} aria-label="Create an account with a passkey">
              <label>
                Your name
                <input name="name" autocomplete="name" required maxLength={100} value={signupName()} onInput={(e) => setSignupName(e.currentTarget.value)} />
              </label>
              <Show when={signup()?.inviteRequired}>
                <label>
                  Invitation code
                  <input name="inviteCode" autocomplete="off" required value={inviteCode()} onInput={(e) => setInviteCode(e.currentTarget.value)} />
                </label>
              </Show>
              <button type="submit" style={{ width: '100%' }} disabled={passkeyBusy()} aria-busy={passkeyBusy()} data-action="passkey-signup">
                Create an account with a passkey
              </button>
              <p class="small muted">No password: the passkey on this device (unlocked with your fingerprint, face or PIN) is your sign-in.</p>
            </form>
            <Show when={signupError()}>
              <p class="error small" role="alert" style={{ color: 'var(--danger)', 'margin-top': '0.5rem' }}>
                {signupError()}
              </p>
            </Show>
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
