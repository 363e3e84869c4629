import { Show, type JSX } from 'solid-js';
import { pending } from '../lib/confirm.ts';

/**
 * The app's confirm dialog (lib/confirm.ts `ask`): a modal <dialog>, so the page behind it is inert;
 * Tab cycles inside it, Escape cancels, and focus starts on Cancel (the safe choice).
 */
export function ConfirmDialog(): JSX.Element {
  return (
    <Show when={pending()} keyed>
      {(q) => (
        <dialog
          class="confirm-dialog"
          aria-labelledby="confirm-h"
          aria-describedby={q.body ? 'confirm-body' : undefined}
          data-testid="confirm-dialog"
          ref={(el) => queueMicrotask(() => el.isConnected && (el.showModal(), el.querySelector<HTMLElement>('[data-cancel]')?.focus()))}
          // Escape: the browser's cancel event, answered as "no".
          onCancel={(e) => {
            e.preventDefault();
            q.answer(false);
          }}
          onKeyDown={(e) => {
            if (e.key !== 'Tab') return;
            const buttons = [...e.currentTarget.querySelectorAll<HTMLElement>('button')];
            const at = buttons.indexOf(document.activeElement as HTMLElement);
            const next = at + (e.shiftKey ? -1 : 1);
            if (next < 0 || next >= buttons.length) {
              e.preventDefault();
              buttons[(next + buttons.length) % buttons.length]!.focus();
            }
          }}
        >
          <h2 id="confirm-h">{q.title}</h2>
          <Show when={q.body}>
            <p id="confirm-body">{q.body}</p>
          </Show>
          <div class="row">
            <button type="button" data-cancel onClick={() => q.answer(false)}>
              Cancel
            </button>
            <button type="button" class={q.danger ? 'danger' : 'primary'} onClick={() => q.answer(true)}>
              {q.confirm}
            </button>
          </div>
        </dialog>
      )}
    </Show>
  );
}
