import { createSignal, lazy, Show, type JSX } from 'solid-js';
import { ApiError, del, post } from '../../lib/api.ts';
import { signOut } from '../../lib/session.ts';
import { AsyncButton, Field } from '../../components/ui.tsx';

const ImportWizard = lazy(() => import('../../components/ImportWizard.tsx'));
/** Progress counts with the reader's digit grouping ("12,345"). */
const count = new Intl.NumberFormat();

/** What the person types to confirm the deletion. */
export const DELETE_PHRASE = 'delete my account';

interface Progress {
  done: number;
  total: number;
}

/**
 * Download an export while counting what has arrived: the JSON export writes one task or completion
 * per line, the .ics one VTODO per task; X-Export-Tasks (and -Completions) say how many are coming.
 */
async function download(path: string, unit: 'line' | 'vtodo', onProgress: (p: Progress) => void): Promise<string> {
  let res: Response;
  try {
    res = await fetch(path, { credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached. Check your connection and try again.');
  }
  if (!res.ok) {
    const b = (await res.json().catch(() => ({}))) as { code?: string; message?: string };
    throw new ApiError(res.status, b.code ?? `HTTP_${res.status}`, b.message ?? res.statusText);
  }
  const total = Number(res.headers.get('x-export-tasks') ?? 0) + (unit === 'line' ? Number(res.headers.get('x-export-completions') ?? 0) : 0);
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? (unit === 'line' ? 'export.json' : 'export.ics');
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const chunks: Uint8Array[] = [];
  let done = 0;
  let carry = '';
  const marker = unit === 'line' ? '\n' : 'BEGIN:VTODO';
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    chunks.push(r.value);
    // count markers, keeping the tail that may hold the start of one cut by the chunk boundary
    const text = carry + decoder.decode(r.value, { stream: true });
    done += text.split(marker).length - 1;
    carry = text.slice(-(marker.length - 1));
    onProgress({ done: Math.min(done, total), total });
  }
  const url = URL.createObjectURL(new Blob(chunks as BlobPart[], { type: unit === 'line' ? 'application/json' : 'text/calendar' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return name;
}

function ExportButton(props: { label: string; path: string; unit: 'line' | 'vtodo'; testid: string }): JSX.Element {
  const [progress, setProgress] = createSignal<Progress | null>(null);
  const [saved, setSaved] = createSignal<string | null>(null);
  const [error, setError] = createSignal<string | null>(null);
  const run = async () => {
    setError(null);
    setSaved(null);
    setProgress({ done: 0, total: 0 });
    try {
      setSaved(await download(props.path, props.unit, setProgress));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'The download broke off. Try again.');
    } finally {
      setProgress(null);
    }
  };
  return (
    <div class="stack" data-testid={props.testid}>
      <AsyncButton class="primary" action={run} disabled={progress() !== null}>
        {props.label}
      </AsyncButton>
      <Show when={progress()}>
        {(p) => (
          <div role="status" aria-live="polite">
            <progress max={Math.max(1, p().total)} value={p().done} />{' '}
            <span class="small muted">{p().total > 0 ? `${count.format(p().done)} of ${count.format(p().total)}` : 'Preparing…'}</span>
          </div>
        )}
      </Show>
      <Show when={saved()}>{(name) => <p class="small" role="status">Saved {name()}.</p>}</Show>
      <Show when={error()}>{(e) => <div class="banner error" role="alert">{e()}</div>}</Show>
    </div>
  );
}

/** Delete the account behind a typed confirmation; a stale sign-in is asked for a fresh second factor (or a new sign-in). */
function DeleteAccount(): JSX.Element {
  const [typed, setTyped] = createSignal('');
  const [code, setCode] = createSignal('');
  const [needsRecent, setNeedsRecent] = createSignal(false);
  const [error, setError] = createSignal<string | null>(null);
  const remove = async () => {
    setError(null);
    try {
      await del('/api/user');
      await signOut();
    } catch (err) {
      if (err instanceof ApiError && err.code === 'RECENT_AUTH_REQUIRED') setNeedsRecent(true);
      setError(err instanceof ApiError ? err.message : 'The account could not be deleted. Try again.');
    }
  };
  const confirmFactor = async () => {
    setError(null);
    try {
      await post('/api/auth/2fa/verify', { body: { code: code().replace(/\s+/g, '') } });
      setNeedsRecent(false);
      await remove();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'That code did not work.');
    }
  };
  return (
    <section class="card stack" aria-labelledby="delete-h" data-testid="delete-account">
      <h2 id="delete-h">Delete account</h2>
      <p class="small muted">
        Deletes your account and everything in it — tasks, topics, history, coins, settings, notification channels, webhooks, API keys — in every part of this installation, and signs you out. It cannot be undone: download
        your data first.
      </p>
      <Field label={`Type “${DELETE_PHRASE}” to confirm`}>
        {(id, describedBy) => <input id={id} aria-describedby={describedBy} autocomplete="off" value={typed()} onInput={(e) => setTyped(e.currentTarget.value)} data-testid="delete-confirm" />}
      </Field>
      <div class="row">
        <AsyncButton class="danger" action={remove} disabled={typed().trim().toLowerCase() !== DELETE_PHRASE} data-testid="delete-button">
          Delete my account
        </AsyncButton>
      </div>
      <Show when={needsRecent()}>
        <div class="stack" data-testid="delete-reauth">
          <p class="small">For your safety, deleting needs a sign-in from the last 10 minutes. Enter a code from your authenticator app, or sign out and sign in again.</p>
          <div class="row" style={{ 'align-items': 'flex-end' }}>
            <Field label="Authenticator or backup code">
              {(id, describedBy) => <input id={id} aria-describedby={describedBy} inputmode="numeric" autocomplete="one-time-code" value={code()} onInput={(e) => setCode(e.currentTarget.value)} />}
            </Field>
            <AsyncButton action={confirmFactor} disabled={code().trim() === ''}>
              Confirm and delete
            </AsyncButton>
            <button type="button" class="ghost" onClick={() => void signOut()}>
              Sign out and in again
            </button>
          </div>
        </div>
      </Show>
      <Show when={error()}>{(e) => <div class="banner error" role="alert">{e()}</div>}</Show>
    </section>
  );
}

/** Settings → Your data: take everything out, bring things in (the import wizard), or delete the account (docs/moving.md). */
export default function YourData(): JSX.Element {
  return (
    <>
      <section class="card stack" aria-labelledby="export-h" data-testid="your-data-export">
        <h2 id="export-h">Download your data</h2>
        <p class="small muted">
          Everything you have here as one JSON file (tasks with their whole history, topics, settings, coins and achievements, notification channels and webhooks without their secrets), or your tasks as an
          iCalendar file for Thunderbird, Nextcloud Tasks or any task app. Up to 5 downloads an hour.
        </p>
        <div class="row" style={{ 'align-items': 'flex-start' }}>
          <ExportButton label="Download everything (JSON)" path="/api/user/export" unit="line" testid="export-json" />
          <ExportButton label="Download tasks (.ics)" path="/api/user/export.ics" unit="vtodo" testid="export-ics" />
        </div>
      </section>
      <section class="card stack" aria-labelledby="import-h" data-testid="your-data-import">
        <h2 id="import-h">Import</h2>
        <ImportWizard />
      </section>
      <DeleteAccount />
    </>
  );
}
