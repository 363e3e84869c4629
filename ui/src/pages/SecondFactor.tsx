import { useNavigate } from '@solidjs/router';
import { createResource, createSignal, Show, type JSX } from 'solid-js';
import { credential, get, post } from '../lib/api.ts';
import { session, signOut } from '../lib/session.ts';
import { errorText } from '../lib/toast.ts';
import { PasskeyEnrol, TotpEnrol } from '../components/Enrol.tsx';
import { Field, Spinner } from '../components/ui.tsx';

/**
 * /setup/2fa: forced enrolment while REQUIRE_2FA is on and the user has no factor.
 * /login/2fa: this session proves an existing factor (TOTP, backup code or passkey).
 */
export default function SecondFactor(props: { mode: 'setup' | 'verify' }): JSX.Element {
  const navigate = useNavigate();
  const [status] = createResource(() => get('/api/auth/2fa/status'));
  const [code, setCode] = createSignal('');
  const [error, setError] = createSignal('');
  const [busy, setBusy] = createSignal(false);

  async function finish() {
    await session.refetch();
    navigate('/dashboard', { replace: true });
  }

  async function verifyCode(e: SubmitEvent) {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      await post('/api/auth/2fa/verify', { body: { code: code().replace(/\s+/g, '') } });
      await finish();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  async function verifyPasskey() {
    setBusy(true);
    setError('');
    try {
      const { startAuthentication } = await import('@simplewebauthn/browser');
      const { challengeId, options } = await post('/api/auth/passkey/2fa/options');
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const response = await startAuthentication({ optionsJSON: options as any });
      await post('/api/auth/passkey/2fa/verify', { body: { challengeId, response: credential(response) } });
      await finish();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="auth-wrap">
      <main class="card auth-card" id="main" style={{ width: 'min(100%, 34rem)' }}>
        <Show when={!status.loading} fallback={<Spinner />}>
          <Show
            when={props.mode === 'setup'}
            fallback={
              <>
                <h1>Confirm it's you</h1>
                <p class="muted">Enter a code from your authenticator app or a backup code, or use a passkey.</p>
                <form class="stack" onSubmit={(e) => void verifyCode(e)}>
                  <Field label="Code" error={error() || undefined}>
                    {(id, d) => <input id={id} aria-describedby={d} autocomplete="one-time-code" maxlength="32" value={code()} onInput={(e) => setCode(e.currentTarget.value)} required />}
                  </Field>
                  <button class="primary" type="submit" disabled={busy()}>
                    Verify
                  </button>
                </form>
                <Show when={(status()?.passkeys ?? 0) > 0}>
                  <div class="divider">or</div>
                  <button type="button" style={{ width: '100%' }} onClick={() => void verifyPasskey()} disabled={busy()}>
                    Use a passkey
                  </button>
                </Show>
              </>
            }
          >
            <h1>Set up a second factor</h1>
            <Show when={status()?.required}>
              <div class="banner warn" role="status" style={{ 'margin-bottom': '1rem' }}>
                This instance requires a second factor for every account. Set one up to continue.
              </div>
            </Show>
            <section class="stack" aria-labelledby="totp-h">
              <h2 id="totp-h">Authenticator app (TOTP)</h2>
              <TotpEnrol onDone={() => void finish()} />
            </section>
            <div class="divider">or</div>
            <section class="stack" aria-labelledby="pk-h">
              <h2 id="pk-h">Passkey</h2>
              <PasskeyEnrol onDone={() => void finish()} />
            </section>
          </Show>
        </Show>
        <p class="small" style={{ 'margin-top': '1.5rem' }}>
          <button type="button" class="ghost small" onClick={() => void signOut()}>
            Sign out
          </button>
        </p>
      </main>
    </div>
  );
}
