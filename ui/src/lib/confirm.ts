import { createSignal } from 'solid-js';

/** A question that needs a yes before something that cannot be undone (revoking a key, rotating a URL). */
export interface Question {
  title: string;
  body?: string;
  /** the confirming button's label: the action itself ("Revoke"), never "OK" */
  confirm: string;
  danger?: boolean;
}

interface Pending extends Question {
  answer: (yes: boolean) => void;
}

const [pending, setPending] = createSignal<Pending | null>(null);
export { pending };

/**
 * Ask in the app's own dialog (components/ConfirmDialog.tsx) instead of `confirm()`: styled, labelled,
 * focus kept inside, Escape cancels. Resolves true only for the confirming button; focus then goes
 * back to the control that asked.
 */
export function ask(q: Question): Promise<boolean> {
  pending()?.answer(false); // one question at a time
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  return new Promise((resolve) => {
    setPending({
      ...q,
      answer: (yes) => {
        setPending(null);
        queueMicrotask(() => (opener?.isConnected ? opener.focus() : document.getElementById('main')?.focus()));
        resolve(yes);
      },
    });
  });
}
