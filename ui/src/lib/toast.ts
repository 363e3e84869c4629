import { createSignal } from 'solid-js';
import { ApiError } from './api.ts';

export interface Toast {
  id: number;
  text: string;
  kind: 'info' | 'error';
  action?: { label: string; run: () => void } | undefined;
}

const [toasts, setToasts] = createSignal<Toast[]>([]);
let seq = 0;

export { toasts };

export function dismiss(id: number): void {
  setToasts((t) => t.filter((x) => x.id !== id));
}

/** A short message in the live region; an action (e.g. Undo) keeps it up longer. */
export function toast(text: string, opts: { kind?: 'info' | 'error'; action?: Toast['action'] } = {}): void {
  const id = ++seq;
  setToasts((t) => [...t.slice(-1), { id, text, kind: opts.kind ?? 'info', action: opts.action }]);
  setTimeout(() => dismiss(id), opts.action ? 8000 : 4000);
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message || err.code;
  return err instanceof Error ? err.message : String(err);
}

export function toastError(err: unknown): void {
  toast(errorText(err), { kind: 'error' });
}
