import { createEffect, createSignal, createUniqueId, For, onCleanup, Show, splitProps, type JSX } from 'solid-js';
import { toastError } from '../lib/toast.ts';
import type { Priority } from '../lib/types.ts';

export function Spinner(): JSX.Element {
  return <span class="spinner" aria-hidden="true" />;
}

/** A labelled form control with hint and error text wired to aria-describedby. */
export function Field(props: { label: string; hint?: string | undefined; error?: string | undefined; children: (id: string, describedBy: string | undefined) => JSX.Element }): JSX.Element {
  const id = createUniqueId();
  const describedBy = () => [props.hint ? `${id}-hint` : '', props.error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, describedBy())}
      <Show when={props.hint}>
        <span class="hint" id={`${id}-hint`}>
          {props.hint}
        </span>
      </Show>
      <Show when={props.error}>
        <span class="error" id={`${id}-err`} role="alert">
          {props.error}
        </span>
      </Show>
    </div>
  );
}

/** A button that runs an async action, shows it is busy, and reports failures in a toast. */
export function AsyncButton(props: JSX.ButtonHTMLAttributes<HTMLButtonElement> & { action: () => Promise<unknown> }): JSX.Element {
  const [local, rest] = splitProps(props, ['action', 'children', 'disabled']);
  const [busy, setBusy] = createSignal(false);
  return (
    <button
      type="button"
      {...rest}
      // Busy is aria-disabled, not disabled: a disabled button drops the focus (a confirm dialog gives it back here).
      disabled={local.disabled}
      aria-disabled={busy() || undefined}
      aria-busy={busy()}
      onClick={async () => {
        if (busy()) return;
        setBusy(true);
        try {
          await local.action();
        } catch (err) {
          toastError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      {local.children}
    </button>
  );
}

export function Empty(props: { children: JSX.Element }): JSX.Element {
  return <p class="empty">{props.children}</p>;
}

export function ErrorBanner(props: { error: unknown }): JSX.Element {
  return (
    <div class="banner error" role="alert">
      {props.error instanceof Error ? props.error.message : String(props.error)}
    </div>
  );
}

/** Sub-navigation of a section (settings, progress). */
export function Tabs(props: { items: { href: string; label: string }[]; current: string }): JSX.Element {
  let nav!: HTMLElement;
  // The tab bar scrolls sideways on a phone: the current tab is scrolled into sight.
  createEffect(() => {
    void props.current;
    const el = nav.querySelector<HTMLElement>('[aria-current="page"]');
    if (el) nav.scrollLeft += el.getBoundingClientRect().left - nav.getBoundingClientRect().left - (nav.clientWidth - el.offsetWidth) / 2;
  });
  return (
    <nav class="tabs" aria-label="Section" ref={nav}>
      <For each={props.items}>
        {(item) => (
          <a href={item.href} aria-current={props.current === item.href ? 'page' : undefined} classList={{ active: props.current === item.href }}>
            {item.label}
          </a>
        )}
      </For>
    </nav>
  );
}

/**
 * An editor or dialog that opens in place (task editor, topic form, channel and webhook settings):
 * use as `ref={(el) => dismissable(el, close)}` on its form. Focus moves to its first field when it
 * opens, Escape closes it, and focus goes back to whatever opened it (the Edit or Set up button).
 */
export function dismissable(el: HTMLElement, close: () => void): void {
  const opener = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null;
  queueMicrotask(() => el.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea')?.focus());
  el.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || e.defaultPrevented) return;
    e.preventDefault();
    close();
  });
  // After the editor is gone (saved or cancelled): back where the person was.
  onCleanup(() => queueMicrotask(() => opener?.isConnected && opener.focus()));
}

/**
 * Keep a CSS custom property on the root at `el`'s height while it is mounted (the toasts' height,
 * the task sheet's), so other boxes can keep clear of it.
 */
export function cssHeight(el: HTMLElement, property: string, resized?: () => void): void {
  const root = document.documentElement.style;
  const ro = new ResizeObserver(() => {
    root.setProperty(property, `${el.offsetHeight}px`);
    resized?.();
  });
  ro.observe(el);
  onCleanup(() => {
    ro.disconnect();
    root.removeProperty(property);
  });
}

/** The submit button (and Cancel, when the form can be dismissed) that close a create/edit form. */
export function FormActions(props: { submitLabel: string; onCancel?: (() => void) | undefined }): JSX.Element {
  return (
    <div class="row">
      <button class="primary" type="submit">
        {props.submitLabel}
      </button>
      <Show when={props.onCancel}>
        <button type="button" onClick={() => props.onCancel!()}>
          Cancel
        </button>
      </Show>
    </div>
  );
}

/** The three task priorities, for tasks and topics alike. */
export function PrioritySelect(props: { id: string; value: Priority; onChange: (value: Priority) => void }): JSX.Element {
  return (
    <select id={props.id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value as Priority)}>
      <option value="HIGH">High</option>
      <option value="NORMAL">Normal</option>
      <option value="SOMEDAY">Someday</option>
    </select>
  );
}

// Browsers list only geographic zones; UTC (the service's default) must stay selectable.
const ZONES: string[] = ['UTC', ...((Intl as unknown as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('timeZone') ?? []).filter((z) => z !== 'UTC')];

/** Every IANA timezone the browser knows (the current one first if it knows it not). */
export function TimezoneSelect(props: { id: string; value: string; onChange: (zone: string) => void; describedBy?: string | undefined; ref?: (el: HTMLSelectElement) => void }): JSX.Element {
  return (
    <select id={props.id} ref={props.ref} aria-describedby={props.describedBy} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
      <For each={ZONES.includes(props.value) ? ZONES : [props.value, ...ZONES]}>{(z) => <option value={z}>{z}</option>}</For>
    </select>
  );
}

/** A route chunk that did not arrive: offline, or a deploy replaced the hashed files. */
export function isChunkLoadError(err: unknown): boolean {
  return err instanceof Error && /dynamically imported module|Importing a module script failed|error loading dynamically imported|Unable to preload CSS/i.test(err.message);
}

/**
 * What a screen shows instead of crashing: a failed screen load (offline or after a deploy) offers
 * an in-app retry, and a reload for when a new version replaced the files; other errors say what broke.
 */
export function ErrorScreen(props: { error: unknown; reset: () => void }): JSX.Element {
  const chunk = () => isChunkLoadError(props.error);
  const offline = () => chunk() || (props.error as { code?: string } | undefined)?.code === 'NETWORK';
  return (
    <div class="banner error" role="alert" data-testid="error-screen">
      <h1>{chunk() ? 'This screen could not be loaded' : offline() ? 'You are offline' : 'Something went wrong'}</h1>
      <p>{chunk() ? 'You may be offline, or a new version of Task Service was just published.' : props.error instanceof Error ? props.error.message : String(props.error)}</p>
      <div class="row">
        <button class="primary" type="button" onClick={() => props.reset()}>
          Try again
        </button>
        <Show when={chunk()}>
          <button type="button" onClick={() => location.reload()}>
            Reload the app
          </button>
        </Show>
      </div>
    </div>
  );
}
