import { createEffect, createSignal, createUniqueId, For, on, onCleanup, Show, type JSX } from 'solid-js';
import { Icon } from './icons.tsx';

export interface MenuItem {
  label: string;
  run: () => void;
  danger?: boolean;
  /** items of one group (Due, Priority, Topic) sit together under its name */
  group?: string;
}

/** Consecutive items of the same group, in order. */
function grouped(items: MenuItem[]): { name: string; items: MenuItem[] }[] {
  const out: { name: string; items: MenuItem[] }[] = [];
  for (const item of items) {
    const name = item.group ?? '';
    if (out.at(-1)?.name === name) out.at(-1)!.items.push(item);
    else out.push({ name, items: [item] });
  }
  return out;
}

/**
 * A compact actions menu (one ⋯ button per row), as the WAI-ARIA menu button pattern: Enter, Space
 * or ArrowDown open it on the first item, ArrowUp on the last; arrows, Home and End move; Escape
 * closes it and focus returns to the button; Tab or a click elsewhere closes it. Choosing an item puts
 * focus back on the button first, so whatever the item opens returns focus there.
 */
export function ActionsMenu(props: { label: string; items: MenuItem[]; /** a visible label instead of the ⋯ icon (it is then the button's name) */ text?: string }): JSX.Element {
  const id = createUniqueId();
  const [open, setOpen] = createSignal(false);
  const [place, setPlace] = createSignal({ up: false, room: 0 });
  let button!: HTMLButtonElement;
  let menu: HTMLDivElement | undefined;
  const items = () => [...(menu?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
  const focusItem = (i: number) => {
    const list = items();
    list[(i + list.length) % list.length]?.focus();
  };
  const show = (at: 'first' | 'last') => {
    // Low on the screen, a long menu opens upwards instead of running off the bottom; either way it
    // scrolls within the room there is (below the top bar, above the phone's tab bar).
    const r = button.getBoundingClientRect();
    const top = document.querySelector('.topbar')?.getBoundingClientRect().bottom ?? 0;
    const bottom = document.querySelector('.primary-nav')?.getBoundingClientRect().top ?? innerHeight;
    const up = r.top > innerHeight / 2;
    setPlace({ up, room: Math.max(160, (up ? r.top - Math.max(0, top) : Math.min(innerHeight, bottom > r.bottom ? bottom : innerHeight) - r.bottom) - 12) });
    setOpen(true);
    focusItem(at === 'first' ? 0 : -1);
  };
  // Data arriving while the menu is open (topics, the task itself) renders its items anew, and the
  // focused one would take the focus with it to <body>: the item with the same label gets it back.
  // Only an open menu reads its items: a list of closed rows builds none of them.
  let focusedLabel: string | null = null;
  createEffect(
    on(
      () => open() && props.items,
      () => {
        if (open() && focusedLabel !== null && !menu?.contains(document.activeElement)) items().find((el) => el.textContent === focusedLabel)?.focus();
      },
      { defer: true },
    ),
  );
  const close = (refocus: boolean) => {
    setOpen(false);
    focusedLabel = null;
    if (refocus) button.focus();
  };
  const outside = (e: PointerEvent) => {
    if (open() && !button.parentElement!.contains(e.target as Node)) close(false);
  };
  document.addEventListener('pointerdown', outside);
  onCleanup(() => document.removeEventListener('pointerdown', outside));
  const onMenuKey = (e: KeyboardEvent) => {
    const list = items();
    const at = list.indexOf(document.activeElement as HTMLElement);
    const moves: Record<string, () => void> = {
      ArrowDown: () => focusItem(at + 1),
      ArrowUp: () => focusItem(at - 1),
      Home: () => focusItem(0),
      End: () => focusItem(-1),
      Escape: () => close(true),
    };
    if (e.key === 'Tab') return close(false);
    const move = moves[e.key];
    if (!move) return;
    e.preventDefault();
    e.stopPropagation(); // Escape closes the menu, not the editor or dialog around it
    move();
  };
  return (
    <div class="menu-wrap">
      <button
        ref={button}
        type="button"
        class={props.text ? 'small' : 'ghost icon-only small'}
        aria-label={props.text ? undefined : props.label}
        aria-haspopup="menu"
        aria-expanded={open()}
        aria-controls={open() ? id : undefined}
        onClick={() => (open() ? close(false) : show('first'))}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            e.preventDefault();
            show(e.key === 'ArrowDown' ? 'first' : 'last');
          }
        }}
      >
        {props.text ?? <Icon name="more" />}
      </button>
      <Show when={open()}>
        <div ref={menu} id={id} class="menu" classList={{ up: place().up }} style={{ 'max-height': `${place().room}px` }} role="menu" aria-label={props.label} onKeyDown={onMenuKey} onFocusIn={(e) => (focusedLabel = (e.target as HTMLElement).textContent)}>
          <For each={grouped(props.items)}>
            {(group) => {
              const buttons = (
                <For each={group.items}>
                  {(item) => (
                    <button
                      type="button"
                      role="menuitem"
                      tabindex="-1"
                      classList={{ danger: item.danger }}
                      onClick={() => {
                        close(true);
                        item.run();
                      }}
                    >
                      {item.label}
                    </button>
                  )}
                </For>
              );
              return group.name ? (
                <div role="group" aria-labelledby={`${id}-${group.name}`} class="menu-group">
                  <span class="menu-label" id={`${id}-${group.name}`}>
                    {group.name}
                  </span>
                  {buttons}
                </div>
              ) : (
                buttons
              );
            }}
          </For>
        </div>
      </Show>
    </div>
  );
}
