import { createSignal, For, onCleanup, Show, type JSX } from 'solid-js';
import type { ImportCount, ImportProblem, ImportRecurrence, ImportView } from '../../../proto/src/user-import.ts';
import { IMPORT_FORMAT_LABELS, IMPORT_LIMITS } from '../../../proto/src/import-formats.ts';
import { ApiError, del, get, post, upload, type Issue } from '../lib/api.ts';
import { AsyncButton } from './ui.tsx';

/**
 * Bring tasks over from another app (docs/moving.md): upload → preview → confirm → progress →
 * result. Nothing is written before the confirm; the preview names every row that cannot come over
 * as it is and how each repeating task was mapped.
 */

const KIND_LABELS: Record<ImportCount['kind'], string> = {
  topics: 'Topics',
  tasks: 'Tasks',
  subtasks: 'Subtasks',
  completions: 'Completions (history)',
  wishlistItems: 'Wishlist items',
  energyCheckins: 'Energy check-ins',
  settings: 'Settings',
  progress: 'Coins, streaks and achievements',
};

const where = (p: { file: string; row: number | null; field: string | null }) => [p.file, p.row !== null ? `row ${p.row}` : null, p.field].filter(Boolean).join(' · ');

type Step = 'choose' | 'preview' | 'running' | 'done' | 'failed';

export default function ImportWizard(): JSX.Element {
  const [step, setStep] = createSignal<Step>('choose');
  const [file, setFile] = createSignal<File | null>(null);
  const [view, setView] = createSignal<ImportView | null>(null);
  const [problems, setProblems] = createSignal<ImportProblem[]>([]);
  const [recurrences, setRecurrences] = createSignal<ImportRecurrence[]>([]);
  const [error, setError] = createSignal<{ message: string; issues: Issue[] } | null>(null);
  let timer: ReturnType<typeof setTimeout> | undefined;
  onCleanup(() => clearTimeout(timer));

  function show(v: ImportView) {
    setView(v);
    setProblems(v.preview.problems.items);
    setRecurrences(v.preview.recurrences.items);
  }

  async function preview() {
    const f = file();
    if (!f) return;
    setError(null);
    if (f.size > IMPORT_LIMITS.maxBytes) {
      setError({ message: `The file is ${(f.size / 1024 / 1024).toFixed(1)} MiB; at most ${IMPORT_LIMITS.maxBytes / 1024 / 1024} MiB can be imported at once. Split it, or export one project at a time.`, issues: [] });
      return;
    }
    try {
      const r = await upload({ filename: f.name }, f);
      show(r.import);
      setStep('preview');
    } catch (err) {
      setError(err instanceof ApiError ? { message: err.message, issues: err.issues } : { message: String(err), issues: [] });
    }
  }

  async function more(list: 'problems' | 'recurrences') {
    const v = view()!;
    const parts = (have: unknown[]) => ({ params: { id: v.id }, query: { offset: have.length, limit: 500 } });
    if (list === 'problems') setProblems([...problems(), ...(await get('/api/user/import/:id/problems', parts(problems()))).items]);
    else setRecurrences([...recurrences(), ...(await get('/api/user/import/:id/recurrences', parts(recurrences()))).items]);
  }

  async function poll() {
    const r = await get('/api/user/import/:id', { params: { id: view()!.id } }).catch(() => null);
    if (r) {
      setView(r.import);
      if (r.import.status === 'done') return setStep('done');
      if (r.import.status === 'failed') return setStep('failed');
    }
    timer = setTimeout(() => void poll(), 500);
  }

  async function confirm() {
    const r = await post('/api/user/import/:id/confirm', { params: { id: view()!.id } });
    setView(r.import);
    setStep('running');
    void poll();
  }

  async function cancel() {
    const v = view();
    if (v && v.status === 'previewed') await del('/api/user/import/:id', { params: { id: v.id } }).catch(() => undefined);
    restart();
  }

  function restart() {
    clearTimeout(timer);
    setStep('choose');
    setView(null);
    setFile(null);
    setError(null);
  }

  const toImport = () => (view()?.preview.counts ?? []).reduce((n, c) => n + (c.kind === 'settings' || c.kind === 'progress' ? 0 : c.toImport), 0);
  const percent = () => {
    const p = view()?.progress;
    return p && p.total > 0 ? Math.round((100 * p.done) / p.total) : 0;
  };

  return (
    <section class="card stack" aria-labelledby="import-h" data-testid="import-wizard">
      <h2 id="import-h">Import</h2>
      <Show when={step() === 'choose'}>
        <p class="small muted">
          Bring your tasks from Todoist (a project's CSV or the backup ZIP), from an app that exports iCalendar tasks (Thunderbird, Nextcloud Tasks, tasks.org: an .ics file), from Momo, or from another Task Service (its export). You see what would come over before anything is
          imported.
        </p>
        <label for="import-file">File to import</label>
        <input id="import-file" type="file" accept=".json,.csv,.zip,.ics,.ical,text/calendar,text/csv,application/json,application/zip" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        <Show when={error()}>
          <div class="banner error stack" role="alert" data-testid="import-error">
            <span>{error()!.message}</span>
            <Show when={error()!.issues.length > 1}>
              <ul class="small">
                <For each={error()!.issues}>{(i) => <li>{`${[i.file, i.row !== undefined ? `row ${i.row}` : null, i.field].filter(Boolean).join(' · ')}: ${i.message}`}</li>}</For>
              </ul>
            </Show>
          </div>
        </Show>
        <div class="row">
          <AsyncButton class="primary" disabled={!file()} action={preview}>
            Preview
          </AsyncButton>
        </div>
      </Show>

      <Show when={step() === 'preview' && view()}>
        <p data-testid="import-format">
          <strong>{IMPORT_FORMAT_LABELS[view()!.format]}</strong> · {view()!.fileName}
        </p>
        <table class="stacked" data-testid="import-counts">
          <caption class="sr-only">What the import brings</caption>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">New</th>
              <th scope="col">Already here</th>
            </tr>
          </thead>
          <tbody>
            <For each={view()!.preview.counts.filter((c) => c.toImport + c.alreadyImported > 0)}>
              {(c) => (
                <tr>
                  <th scope="row">{KIND_LABELS[c.kind]}</th>
                  <td data-label="New">{c.toImport}</td>
                  <td data-label="Already here">{c.alreadyImported}</td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
        <Show when={view()!.preview.recurrences.total > 0}>
          <details open={view()!.preview.recurrences.items.some((r) => r.outcome === 'not-expressible')}>
            <summary>How {view()!.preview.recurrences.total} repeating item(s) come over</summary>
            <ul class="small" data-testid="import-recurrences">
              <For each={recurrences()}>
                {(r) => (
                  <li classList={{ warn: r.outcome === 'not-expressible' }}>
                    <strong>{r.title}</strong> — “{r.source}” → {r.message} <span class="muted">({where(r)})</span>
                  </li>
                )}
              </For>
            </ul>
            <Show when={recurrences().length < view()!.preview.recurrences.total}>
              <AsyncButton class="small" action={() => more('recurrences')}>
                Show more
              </AsyncButton>
            </Show>
          </details>
        </Show>
        <Show when={view()!.preview.problems.total > 0}>
          <details open>
            <summary>{view()!.preview.problems.total} row(s) cannot come over as they are</summary>
            <ul class="small" data-testid="import-problems">
              <For each={problems()}>
                {(p) => (
                  <li>
                    <strong>{p.outcome === 'skipped' ? 'Not imported' : 'Changed'}</strong>
                    {p.title ? ` “${p.title}”` : ''}: {p.message} <span class="muted">({where(p)})</span>
                  </li>
                )}
              </For>
            </ul>
            <Show when={problems().length < view()!.preview.problems.total}>
              <AsyncButton class="small" action={() => more('problems')}>
                Show more
              </AsyncButton>
            </Show>
          </details>
        </Show>
        <p class="small muted">Imported tasks earn no coins and unlock nothing. Importing the same file again adds nothing.</p>
        <div class="row">
          <AsyncButton class="primary" action={confirm} disabled={toImport() === 0 && !view()!.preview.counts.some((c) => c.kind === 'settings' && c.toImport > 0)}>
            {toImport() === 0 ? 'Nothing new to import' : `Import ${toImport()} item${toImport() === 1 ? '' : 's'}`}
          </AsyncButton>
          <AsyncButton action={cancel}>Cancel</AsyncButton>
        </div>
      </Show>

      <Show when={step() === 'running' && view()}>
        <p aria-live="polite">Importing… {view()!.progress.done} of {view()!.progress.total}</p>
        <div class="progress" role="progressbar" aria-label="Import progress" aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent()}>
          <span style={{ width: `${percent()}%` }} />
        </div>
        <p class="small muted">All or nothing: if anything goes wrong, nothing of the file is imported.</p>
      </Show>

      <Show when={step() === 'done' && view()?.result}>
        <div class="banner ok stack" role="status" data-testid="import-result">
          <strong>Import finished.</strong>
          <ul class="small">
            <For each={view()!.result!.counts.filter((c) => c.toImport + c.alreadyImported > 0)}>
              {(c) => (
                <li>
                  {KIND_LABELS[c.kind]}: {c.toImport} added{c.alreadyImported > 0 ? `, ${c.alreadyImported} were already here` : ''}
                </li>
              )}
            </For>
          </ul>
        </div>
        <div class="row">
          <a class="button primary" href="/tasks">
            Go to your tasks
          </a>
          <button type="button" onClick={restart}>
            Import another file
          </button>
        </div>
      </Show>

      <Show when={step() === 'failed' && view()}>
        <div class="banner error" role="alert" data-testid="import-failed">
          The import did not finish, and nothing of it was written: {view()!.error}
        </div>
        <div class="row">
          <AsyncButton class="primary" action={confirm}>
            Try again
          </AsyncButton>
          <AsyncButton action={cancel}>Cancel</AsyncButton>
        </div>
      </Show>
    </section>
  );
}
