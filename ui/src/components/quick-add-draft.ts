import { createEffect, createSignal, onCleanup, untrack } from 'solid-js';

/**
 * What was typed into a quick add that left the screen, for the next quick add to take over.
 *
 * A page change is a transition: the old page stays on screen (and usable) until the new one has
 * its data, which on a slow network takes a second. Someone who clicked "Today" and started typing
 * at once typed into the old page's quick add, which then went away with the text, and the next
 * keystroke on the body (an `n` of "grandma") focused the new field: "Call grandma sunday #fam"
 * became a task "dma" (issue 55, bug 8). Now the leaving field hands its text, caret and focus to
 * the arriving one, so typing simply goes on.
 */
interface Draft {
  text: string;
  start: number;
  end: number;
  /** the field had the focus when it left */
  focused: boolean;
  /** which field left it (a field never takes its own draft back) */
  from: symbol;
}

const [draft, setDraft] = createSignal<Draft | null>(null);

/** Nobody has moved on to another control: the focus is nowhere in particular. */
const focusIsFree = () => !document.activeElement || document.activeElement === document.body || document.activeElement.id === 'main';

/**
 * Wire a quick add field to the hand-over: call once in the component body with its input (read
 * only from effects, so after its ref is set) and its text signal.
 */
export function handOverDraft(input: () => HTMLInputElement, text: () => string, setText: (s: string) => void): void {
  const me = Symbol('quick add');
  // Whether it had the focus: a removed element may or may not get a blur first, so a blur that
  // comes with the removal does not count.
  let hadFocus = false;
  createEffect(() => {
    const el = input();
    el.addEventListener('focus', () => (hadFocus = true));
    el.addEventListener('blur', () => (hadFocus = !el.isConnected));
  });
  // Taking: a draft another field left (at once when it left while this one is on screen, or when
  // this one appears after it left). Focus follows only if nobody has put it elsewhere meanwhile.
  createEffect(() => {
    const d = draft();
    const el = input();
    if (!d || d.from === me || !el.isConnected) return;
    setDraft(null);
    // Whatever this field holds already comes after what was typed before the page changed.
    const joined = d.text + untrack(text);
    setText(joined);
    el.value = joined;
    if (d.focused && focusIsFree()) {
      el.focus();
      el.setSelectionRange(d.start, d.end);
    }
  });
  // Leaving: what it holds, and whether it had the focus (still on it while its page is taken down).
  onCleanup(() => {
    const el = input();
    const focused = document.activeElement === el || (hadFocus && focusIsFree());
    if (!text() && !focused) return;
    setDraft({ text: text(), start: el.selectionStart ?? text().length, end: el.selectionEnd ?? text().length, focused, from: me });
  });
}
