import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, del, get, post } from '../../lib/api.ts';
import { formatDateTime } from '../../lib/dates.ts';
import { toast, toastError } from '../../lib/toast.ts';
import { BackupCodes, PasskeyEnrol, TotpEnrol } from '../../components/Enrol.tsx';
import { AsyncButton, ErrorBanner, Spinner } from '../../components/ui.tsx';
import { ask } from '../../lib/confirm.ts';

/** Removing the last factor while REQUIRE_2FA is on is refused by the server (403); say why. */
function explain(err: unknown) {
  if (err instanceof ApiError && err.code === 'TOTP_REQUIRED_BY_ADMIN') toast('This instance requires a second factor: add another one before removing this one.', { kind: 'error' });
  else toastError(err);
}

export default function Security(): JSX.Element {
  const [status, { refetch }] = createResource(() => get('/api/auth/2fa/status'));
  const [passkeys, { refetch: refetchPasskeys }] = createResource(async () => (await get('/api/auth/passkey')).passkeys);
  const [sessions, { refetch: refetchSessions }] = createResource(async () => (await get('/api/auth/sessions')).sessions);
  const [newCodes, setNewCodes] = createSignal<string[] | null>(null);
  const factors = () => (status()?.totpEnabled ? 1 : 0) + (status()?.passkeys ?? 0);
  const lastFactorLocked = () => Boolean(status()?.required) && factors() <= 1;
  const changed = () => {
    void refetch();
    void refetchPasskeys();
  };
  return (
    <div class="stack">
      <Show when={status()?.required}>
        <div class="banner info">This instance requires a second factor. You can change factors, but not remove the last one.</div>
      </Show>
      <section class="card stack" aria-labelledby="totp-h" data-testid="totp-section">
        <h2 id="totp-h">Authenticator app (TOTP)</h2>
        <Show when={!status.error} fallback={<ErrorBanner error={status.error} />}>
          <Show when={status()} fallback={<Spinner />}>
            <Show when={status()!.totpEnabled} fallback={<TotpEnrol onDone={changed} />}>
              <p>
                <span class="badge ok">on</span> {status()!.backupCodesRemaining} backup codes left.
              </p>
              <Show when={newCodes()}>
                <BackupCodes codes={newCodes()!} />
              </Show>
              <div class="row">
                <AsyncButton
                  action={async () => {
                    if (!(await ask({ title: 'Replace all backup codes?', body: 'The old ones stop working at once.', confirm: 'Replace' }))) return;
                    setNewCodes((await post('/api/auth/2fa/backup-codes')).backupCodes);
                    void refetch();
                  }}
                >
                  New backup codes
                </AsyncButton>
                <AsyncButton
                  class="danger"
                  disabled={lastFactorLocked()}
                  title={lastFactorLocked() ? 'Required by the administrator: add a passkey first' : undefined}
                  action={async () => {
                    if (!(await ask({ title: 'Turn off the authenticator app?', body: 'Its codes stop working for this account.', confirm: 'Turn off', danger: true }))) return;
                    try {
                      await del('/api/auth/2fa/totp');
                      toast('Authenticator app removed');
                      changed();
                    } catch (err) {
                      explain(err);
                    }
                  }}
                >
                  Turn off
                </AsyncButton>
              </div>
            </Show>
          </Show>
        </Show>
      </section>
      <section class="card stack" aria-labelledby="pk-h" data-testid="passkey-section">
        <h2 id="pk-h">Passkeys</h2>
        <p class="small muted">Sign in without a password, or confirm it's you, with your device's screen lock or a security key.</p>
        <Show when={passkeys()} fallback={<Spinner />}>
          <Show when={passkeys()!.length > 0} fallback={<p class="muted small">No passkeys yet. Add one to sign in with your fingerprint, face or device PIN instead of a password.</p>}>
            <ul class="list" aria-label="Passkeys">
              <For each={passkeys()}>
                {(p) => (
                  <li data-testid="passkey-row">
                    <div class="grow">
                      <div class="title">{p.name}</div>
                      <div class="meta">
                        added {formatDateTime(p.createdAt)} · last used {formatDateTime(p.lastUsedAt)}
                        {p.backedUp ? ' · synced' : ''}
                      </div>
                    </div>
                    <AsyncButton
                      class="small danger"
                      disabled={lastFactorLocked()}
                      aria-label={`Remove passkey ${p.name}`}
                      action={async () => {
                        if (!(await ask({ title: `Remove the passkey "${p.name}"?`, body: 'It can no longer sign you in.', confirm: 'Remove', danger: true }))) return;
                        try {
                          await del('/api/auth/passkey/:id', { params: { id: p.id } });
                          changed();
                        } catch (err) {
                          explain(err);
                        }
                      }}
                    >
                      Remove
                    </AsyncButton>
                  </li>
                )}
              </For>
            </ul>
          </Show>
        </Show>
        <PasskeyEnrol
          onDone={() => {
            toast('Passkey added');
            changed();
          }}
        />
      </section>
      <section class="card stack" aria-labelledby="sess-h">
        <div class="row between">
          <h2 id="sess-h">Sessions</h2>
          <AsyncButton
            class="small danger"
            action={async () => {
              if (!(await ask({ title: 'Sign out everywhere?', body: 'Every device is signed out, this one included.', confirm: 'Sign out everywhere', danger: true }))) return;
              await del('/api/auth/sessions');
              location.assign('/login');
            }}
          >
            Sign out everywhere
          </AsyncButton>
        </div>
        <Show when={sessions()} fallback={<Spinner />}>
          <ul class="list" aria-label="Sessions">
            <For each={sessions()}>
              {(s) => (
                <li>
                  <div class="grow">
                    <div class="title">
                      {s.userAgent ?? 'Unknown device'} {s.current ? <span class="badge ok">this device</span> : null}
                    </div>
                    <div class="meta">
                      {s.ip ?? ''} · signed in {formatDateTime(s.createdAt)} · active {formatDateTime(s.lastActiveAt)}
                    </div>
                  </div>
                  <Show when={!s.current}>
                    <AsyncButton class="small" action={async () => (await del('/api/auth/sessions/:id', { params: { id: s.id } }), void refetchSessions())}>
                      Sign out
                    </AsyncButton>
                  </Show>
                </li>
              )}
            </For>
          </ul>
        </Show>
      </section>
    </div>
  );
}
