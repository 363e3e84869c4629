import { createResource, createSignal, For, Show, type JSX } from 'solid-js';
import { ApiError, del, get, post } from '../../lib/api.ts';
import { formatDateTime } from '../../lib/dates.ts';
import { toast, toastError } from '../../lib/toast.ts';
import { AsyncButton, Field, Spinner } from '../../components/ui.tsx';
import { ask } from '../../lib/confirm.ts';

export default function ApiKeys(): JSX.Element {
  const [keys, { refetch }] = createResource(async () => (await get('/api/user/api-keys')).keys);
  const [name, setName] = createSignal('');
  const [readOnly, setReadOnly] = createSignal(false);
  const [expires, setExpires] = createSignal('');
  const [created, setCreated] = createSignal<string | null>(null);
  const [error, setError] = createSignal<ApiError | null>(null);
  async function create(e: SubmitEvent) {
    e.preventDefault();
    setError(null);
    try {
      const r = await post('/api/user/api-keys', { body: { name: name().trim(), readOnly: readOnly(), expiresAt: expires() ? new Date(`${expires()}T23:59:59`).toISOString() : null } });
      setCreated(r.key);
      setName('');
      void refetch();
    } catch (err) {
      if (err instanceof ApiError) setError(err);
      else toastError(err);
    }
  }
  return (
    <div class="stack">
      <section class="card stack" aria-labelledby="newkey-h">
        <h2 id="newkey-h">New API key</h2>
        <p class="small muted">
          Use it as <span class="mono">Authorization: Bearer &lt;key&gt;</span>. Read-only keys may only read.
        </p>
        <form class="stack" onSubmit={(e) => void create(e)}>
          <div class="form-grid">
            <Field label="Name" error={error()?.fieldError('name')}>
              {(id, d) => <input id={id} aria-describedby={d} value={name()} onInput={(e) => setName(e.currentTarget.value)} maxlength="100" required />}
            </Field>
            <Field label="Expires (optional)" error={error()?.fieldError('expiresAt')}>
              {(id, d) => <input id={id} aria-describedby={d} type="date" value={expires()} onInput={(e) => setExpires(e.currentTarget.value)} />}
            </Field>
          </div>
          <label class="check">
            <input type="checkbox" checked={readOnly()} onChange={(e) => setReadOnly(e.currentTarget.checked)} /> Read-only
          </label>
          <div>
            <button class="primary" type="submit">
              Create key
            </button>
          </div>
        </form>
        <Show when={created()}>
          <div class="banner ok stack" style={{ gap: '0.5rem' }}>
            <label for="new-key">Your new key (shown only now)</label>
            <input id="new-key" class="mono" readonly value={created()!} data-testid="new-api-key" onFocus={(e) => e.currentTarget.select()} />
            <div>
              <button type="button" class="small" onClick={() => void navigator.clipboard.writeText(created()!).then(() => toast('Key copied'))}>
                Copy
              </button>
            </div>
          </div>
        </Show>
      </section>
      <section class="card" aria-labelledby="keys-h">
        <h2 id="keys-h">Your keys</h2>
        <Show when={keys()} fallback={<Spinner />}>
          <Show when={keys()!.length > 0} fallback={<p class="muted small">No API keys.</p>}>
            <ul class="list" aria-label="API keys">
              <For each={keys()}>
                {(k) => (
                  <li>
                    <div class="grow">
                      <div class="title">
                        {k.name} {k.readOnly ? <span class="badge">read-only</span> : null}
                      </div>
                      <div class="meta">
                        <span class="mono">{k.prefix}…</span> · created {formatDateTime(k.createdAt)} · last used {formatDateTime(k.lastUsedAt)}
                        {k.expiresAt ? ` · expires ${formatDateTime(k.expiresAt)}` : ''}
                      </div>
                    </div>
                    <AsyncButton
                      class="small danger"
                      action={async () => {
                        if (!(await ask({ title: `Revoke the key "${k.name}"?`, body: 'Programs using it are refused from now on. This cannot be undone.', confirm: 'Revoke', danger: true }))) return;
                        await del('/api/user/api-keys/:id', { params: { id: k.id } });
                        void refetch();
                      }}
                    >
                      Revoke
                    </AsyncButton>
                  </li>
                )}
              </For>
            </ul>
          </Show>
        </Show>
      </section>
    </div>
  );
}
