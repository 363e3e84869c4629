import { createSignal } from 'solid-js';
import { ApiError } from './api.ts';

/** Why a toast went: its action ran, its time ran out, the person dismissed it, or a newer one pushed it out. */
export type CloseReason = 'action' | 'expired' | 'dismissed' | 'replaced';

export interface Toast {
  id: number;
  text: string;
  kind: 'info' | 'error';
  action?: { label: string; run: () => void } | undefined;
  /** move focus to the action button (an Undo right after the control that caused it was used) */
  focus?: boolean | undefined;
  /** where focus goes when the toast closes while it holds the focus (its control may be gone) */
  returnFocus?: ((reason: CloseReason) => void) | undefined;
  onClose?: ((reason: CloseReason) => void) | undefined;
}

const [toasts, setToasts] = createSignal<Toast[]>([]);
let seq = 0;
interface Timer {
  timer?: ReturnType<typeof setTimeout>;
  /** what holds it up: the pointer over it, the focus in it (each let go on its own) */
  holds: Set<'pointer' | 'focus'>;
  due: boolean;
}
const timers = new Map<number, Timer>();

export { toasts };

export function closeToast(id: number, reason: CloseReason): void {
  const t = toasts().find((x) => x.id === id);
  if (!t) return;
  clearTimeout(timers.get(id)?.timer);
  timers.delete(id);
  const hadFocus = document.activeElement?.closest(`[data-toast-id="${id}"]`) != null;
  setToasts((list) => list.filter((x) => x.id !== id));
  // Focus never drops to the page's start when the toast that held it goes.
  if (hadFocus) {
    document.getElementById('main')?.focus();
    t.returnFocus?.(reason);
  }
  t.onClose?.(reason);
}

export function dismiss(id: number): void {
  closeToast(id, 'dismissed');
}

/** The toast's action (Undo): run it, then close the toast. */
export function runToastAction(id: number): void {
  const t = toasts().find((x) => x.id === id);
  if (!t?.action) return;
  closeToast(id, 'action');
  t.action.run();
}

/**
 * While the pointer or the focus is on a toast its time does not run out (WCAG 2.2.1: nobody is
 * rushed while reaching for Undo); it expires once released if its time passed meanwhile.
 */
export function holdToast(id: number, by: 'pointer' | 'focus', held: boolean): void {
  const e = timers.get(id);
  if (!e) return;
  if (held) e.holds.add(by);
  else e.holds.delete(by);
  if (e.holds.size === 0 && e.due) closeToast(id, 'expired');
}

/** A short message in the live region; an action (e.g. Undo) keeps it up longer. Returns its id. */
export function toast(text: string, opts: Omit<Toast, 'id' | 'text' | 'kind'> & { kind?: 'info' | 'error' } = {}): number {
  const id = ++seq;
  const { kind, ...rest } = opts;
  // At most two at a time: the oldest goes (and its onClose runs, e.g. a delete waiting for it is sent).
  for (const old of toasts().slice(0, -1)) closeToast(old.id, 'replaced');
  setToasts((t) => [...t, { id, text, kind: kind ?? 'info', ...rest }]);
  const e: Timer = { holds: new Set(), due: false };
  e.timer = setTimeout(
    () => {
      e.due = true;
      if (e.holds.size === 0) closeToast(id, 'expired');
    },
    opts.action ? 8000 : 4000,
  );
  timers.set(id, e);
  return id;
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message || err.code;
  return err instanceof Error ? err.message : String(err);
}

export function toastError(err: unknown): void {
  toast(errorText(err), { kind: 'error' });
}
