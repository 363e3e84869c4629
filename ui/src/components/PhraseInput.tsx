import { createMemo, For, Show, type JSX } from 'solid-js';
import type { QuickAddParse } from '../lib/quickadd.ts';

/**
 * A text field that understands quick-add phrases (`proto/src/calendar/phrases.ts`): the words it
 * recognised are highlighted in the field itself as they are typed (the field is transparent over a
 * copy of its text whose recognised words are marked, scrolled along with a line longer than the
 * field), and what was not understood is underlined. Used by quick add and by onboarding's first task.
 */
export function PhraseField(props: {
  id: string;
  value: string;
  parsed: QuickAddParse;
  onInput: (value: string) => void;
  /** the id of the PhraseChips under it */
  describedBy: string;
  placeholder?: string;
  testId?: string;
  invalid?: boolean;
  ref?: (el: HTMLInputElement) => void;
}): JSX.Element {
  /** The typed line cut into plain text and recognised parts, in order. */
  const segments = createMemo(() => {
    const out: { text: string; kind?: string }[] = [];
    let at = 0;
    const marks = [...props.parsed.parts, ...props.parsed.notUnderstood.map((n) => ({ ...n, kind: 'unknown' }))];
    for (const p of marks.sort((a, b) => a.start - b.start)) {
      if (p.start < at) continue;
      if (p.start > at) out.push({ text: props.value.slice(at, p.start) });
      out.push({ text: props.value.slice(p.start, p.end), kind: p.kind });
      at = p.end;
    }
    if (at < props.value.length) out.push({ text: props.value.slice(at) });
    return out;
  });
  let input!: HTMLInputElement;
  let backdrop!: HTMLDivElement;
  /** The highlights scroll with a line longer than the field. */
  const follow = () => (backdrop.scrollLeft = input.scrollLeft);
  return (
    <div class="quick-add-field">
      <div class="quick-add-backdrop" ref={backdrop} aria-hidden="true" data-testid={props.testId ? `${props.testId}-highlights` : undefined}>
        <For each={segments()}>{(seg) => (seg.kind ? <mark class={`token-${seg.kind}`}>{seg.text}</mark> : seg.text)}</For>
      </div>
      {/* Never disabled while saving: a disabled field loses focus and the next typed task would go nowhere. */}
      <input
        id={props.id}
        ref={(el) => {
          input = el;
          props.ref?.(el);
        }}
        placeholder={props.placeholder}
        value={props.value}
        onInput={(e) => {
          props.onInput(e.currentTarget.value);
          requestAnimationFrame(follow);
        }}
        onScroll={follow}
        onKeyUp={follow}
        maxlength="300"
        autocomplete="off"
        aria-describedby={props.describedBy}
        aria-invalid={props.invalid || undefined}
        enterkeyhint="done"
      />
    </div>
  );
}

/** What a PhraseField understood, as chips saying what each part means, and what stays in the title with a hint. */
export function PhraseChips(props: { id: string; parsed: QuickAddParse; testId?: string; examples?: JSX.Element }): JSX.Element {
  return (
    <div id={props.id} class="quick-add-preview small" data-testid={props.testId ? `${props.testId}-preview` : undefined} aria-live="polite">
      <Show
        when={props.parsed.parts.length > 0 || props.parsed.notUnderstood.length > 0}
        fallback={
          <span class="muted">
            {props.examples ?? (
              <>
                Try <kbd>tomorrow 18:30</kbd> <kbd>every mon wed fri</kbd> <kbd>monthly on the 1st</kbd> <kbd>!high</kbd> <kbd>#topic</kbd>
              </>
            )}
          </span>
        }
      >
        <span class="sr-only">Understood: </span>
        <ul class="chips" aria-label="Understood">
          <For each={props.parsed.parts}>
            {(p) => (
              <li class={`chip token-${p.kind}`} data-kind={p.kind}>
                {p.label}
              </li>
            )}
          </For>
        </ul>
        <Show when={props.parsed.notUnderstood.length > 0}>
          <ul class="not-understood" aria-label="Not understood">
            <For each={props.parsed.notUnderstood}>
              {(n) => (
                <li>
                  <mark class="token-unknown">{n.text}</mark> stays in the title: {n.hint}
                </li>
              )}
            </For>
          </ul>
        </Show>
      </Show>
    </div>
  );
}
