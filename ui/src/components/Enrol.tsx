import { createSignal, For, Show, type JSX } from 'solid-js';
import { renderSVG } from 'uqr';
import { ApiError, credential, post } from '../lib/api.ts';
import { errorText } from '../lib/toast.ts';
import { dismissable, Field } from './ui.tsx';

/** TOTP enrolment: scan the QR code (or type the secret), confirm with a code, keep the backup codes. */
export function TotpEnrol(props: { onDone: () => void }): JSX.Element {
  const [setup, setSetup] = createSignal<{ secret: string; otpauthUri: string } | null>(null);
  const [code, setCode] = createSignal('');
  const [error, setError] = createSignal('');
  const [codes, setCodes] = createSignal<string[] | null>(null);
  const [busy, setBusy] = createSignal(false);

  let opener: HTMLButtonElement | undefined;
  /** Back to the start; the key shown is dropped (a new setup makes a new one). */
  function cancel() {
    setSetup(null);
    setCode('');
    setError('');
    opener?.focus();
  }

  async function start() {
    setError('');
    setBusy(true);
    try {
      setSetup(await post('/api/auth/2fa/totp/setup'));
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  async function confirm(e: SubmitEvent) {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      const r = await post('/api/auth/2fa/totp/enable', { body: { code: code().replace(/\s+/g, '') } });
      setCodes(r.backupCodes);
    } catch (err) {
      setError(err instanceof ApiError ? (err.fieldError('code') ?? err.message) : errorText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="stack" data-testid="totp-enrol">
      <Show when={!setup()}>
        <button type="button" class="primary" ref={opener} onClick={() => void start()} disabled={busy()} aria-busy={busy()}>
          Set up an authenticator app
        </button>
      </Show>
      <Show when={setup() && !codes()}>
        {/* Opens in place like the other editors: focus in the code field, Escape or Cancel go back to the button. */}
        <div class="stack" ref={(el) => dismissable(el, cancel)} role="group" aria-labelledby="totp-setup-h">
          <p id="totp-setup-h">Scan this code with your authenticator app, then enter the 6-digit code it shows.</p>
          {/* uqr renders an SVG string from the otpauth URI; it contains no user-controlled markup. */}
          <div class="qr" role="img" aria-label="QR code for your authenticator app" innerHTML={renderSVG(setup()!.otpauthUri, { border: 1 })} />
          <p class="small">
            Cannot scan? Enter this key: <code class="mono" data-testid="totp-secret">{setup()!.secret}</code>
          </p>
          <form class="stack" onSubmit={(e) => void confirm(e)}>
            <Field label="Code from the app" error={error() || undefined}>
              {(id, d) => <input id={id} aria-describedby={d} inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="8" value={code()} onInput={(e) => setCode(e.currentTarget.value)} required />}
            </Field>
            <div class="row">
              <button class="primary" type="submit" disabled={busy()}>
                Turn on
              </button>
              <button type="button" onClick={cancel}>
                Cancel
              </button>
            </div>
          </form>
        </div>
      </Show>
      <Show when={codes()}>
        <BackupCodes codes={codes()!} />
        <div>
          <button class="primary" type="button" onClick={() => props.onDone()}>
            I saved my backup codes
          </button>
        </div>
      </Show>
      <Show when={error() && !setup()}>
        <p class="error" role="alert" style={{ color: 'var(--danger)' }}>
          {error()}
        </p>
      </Show>
    </div>
  );
}

export function BackupCodes(props: { codes: string[] }): JSX.Element {
  return (
    <div class="banner ok" data-testid="backup-codes">
      <h3>Backup codes</h3>
      <p class="small">Each code works once, if you lose your authenticator. They are shown only now: store them somewhere safe.</p>
      <div class="codes">
        <For each={props.codes}>{(c) => <span>{c}</span>}</For>
      </div>
      <button type="button" class="small" style={{ 'margin-top': '0.5rem' }} onClick={() => void navigator.clipboard?.writeText(props.codes.join('\n'))}>
        Copy codes
      </button>
    </div>
  );
}

/** Register a passkey with the browser's WebAuthn API (platform authenticator or security key). */
export async function registerPasskey(name: string): Promise<void> {
  const { startRegistration } = await import('@simplewebauthn/browser');
  const { challengeId, options } = await post('/api/auth/passkey/register/options');
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const response = await startRegistration({ optionsJSON: options as any });
  await post('/api/auth/passkey/register/verify', { body: { challengeId, name: name.trim() || undefined, response: credential(response) } });
}

export function PasskeyEnrol(props: { onDone: () => void }): JSX.Element {
  const [name, setName] = createSignal('');
  const [error, setError] = createSignal('');
  const [busy, setBusy] = createSignal(false);
  async function add(e: SubmitEvent) {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      await registerPasskey(name());
      setName('');
      props.onDone();
    } catch (err) {
      setError(err instanceof Error && err.name === 'NotAllowedError' ? 'The passkey prompt was cancelled or timed out.' : errorText(err));
    } finally {
      setBusy(false);
    }
  }
  return (
    <form class="row" onSubmit={(e) => void add(e)} data-testid="passkey-enrol" style={{ 'align-items': 'flex-end' }}>
      <div style={{ flex: '1', 'min-width': '12rem' }}>
        <Field label="Passkey name (optional)" error={error() || undefined}>
          {(id, d) => <input id={id} aria-describedby={d} maxlength="100" placeholder="e.g. Laptop" value={name()} onInput={(e) => setName(e.currentTarget.value)} />}
        </Field>
      </div>
      <button type="submit" class="primary" disabled={busy()} aria-busy={busy()}>
        Add a passkey
      </button>
    </form>
  );
}
