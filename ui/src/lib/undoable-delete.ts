import { createSignal } from 'solid-js';
import { newKey, type Req } from './api.ts';
import { waiting as waiting_, write } from './outbox.ts';
import { closeToast, toast, toastError } from './toast.ts';

/**
 * Delete with Undo. The API has no restore for a deleted task, so the DELETE waits: the row is hidden
 * at once and a toast offers Undo; the request goes out when the toast expires or is dismissed. When
 * the page is hidden or closed meanwhile, every waiting delete is sent at once (keepalive), so nothing
 * the person deleted comes back.
 */
interface Waiting {
  /** a bulk delete is `PATCH /api/tasks/bulk` with its body; one task's is a DELETE */
  req: Req<unknown, 'DELETE' | 'PATCH'>;
  /** the rows it hides */
  ids: string[];
  /** what it is, should it wait in the write queue (lib/outbox.ts) */
  label: string;
  toastId: number;
  done: () => void;
}
const waiting = new Map<string, Waiting>();
const [hiddenIds, setHiddenIds] = createSignal<ReadonlySet<string>>(new Set());

/** Rows deleted but still undoable are not shown. */
export const isDeleted = (id: string): boolean => hiddenIds().has(id);

const setHidden = (ids: string[], on: boolean) =>
  setHiddenIds((s) => {
    const next = new Set(s);
    for (const id of ids) {
      if (on) next.add(id);
      else next.delete(id);
    }
    return next;
  });

async function send(id: string): Promise<void> {
  const w = waiting.get(id);
  if (!w) return;
  waiting.delete(id);
  try {
    await write(w.req, { label: w.label });
    w.done();
  } catch (err) {
    setHidden(w.ids, false); // not deleted: the rows come back
    toastError(err);
  }
}

export function deleteWithUndo(opts: {
  id: string;
  /** the delete, from `request()` (lib/api.ts) */
  req: Req<unknown, 'DELETE' | 'PATCH'>;
  title: string;
  message?: string;
  /** several tasks at once (`PATCH /api/tasks/bulk` with `{ action: 'delete', taskIds }`): the rows hidden */
  bulk?: { ids: string[] };
  done: () => void;
  undone?: () => void;
  returnFocus?: () => void;
}): void {
  const ids = opts.bulk?.ids ?? [opts.id];
  setHidden(ids, true);
  const toastId = toast(opts.message ?? `Deleted "${opts.title}"`, {
    focus: true,
    action: {
      label: 'Undo',
      run: () => {
        waiting.delete(opts.id);
        setHidden(ids, false);
        opts.undone?.();
      },
    },
    returnFocus: (reason) => (reason === 'action' ? undefined : opts.returnFocus?.()),
    onClose: (reason) => reason !== 'action' && void send(opts.id),
  });
  waiting.set(opts.id, { req: opts.req, ids, label: opts.bulk ? (opts.message ?? 'Delete tasks') : `Delete "${opts.title}"`, toastId, done: opts.done });
}

function flush(): void {
  for (const [id, w] of waiting) {
    waiting.delete(id);
    // Offline (or with changes queued before it): into the write queue, which IndexedDB keeps.
    if (!navigator.onLine || waiting_() > 0) {
      void write(w.req, { label: w.label });
    } else {
      // keepalive: the request outlives the page that is going away
      const { method, url, body } = w.req;
      const headers: Record<string, string> = { accept: 'application/json', 'idempotency-key': newKey() };
      if (body !== undefined) headers['content-type'] = 'application/json';
      void fetch(url, { method, credentials: 'same-origin', keepalive: true, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }).then(w.done, () => undefined);
    }
    closeToast(w.toastId, 'dismissed');
  }
}
addEventListener('pagehide', flush);
document.addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && flush());
