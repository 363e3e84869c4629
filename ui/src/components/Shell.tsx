import { A } from '@solidjs/router';
import { For, Show, type JSX } from 'solid-js';
import { session, signOut } from '../lib/session.ts';
import { setTheme, theme, type Theme } from '../lib/theme.ts';
import { dismiss, toasts } from '../lib/toast.ts';
import { gameStats } from '../lib/game.ts';

const NAV = [
  { href: '/dashboard', label: 'Today', icon: '☀' },
  { href: '/tasks', label: 'Tasks', icon: '✓' },
  { href: '/topics', label: 'Topics', icon: '▦' },
  { href: '/stats', label: 'Progress', icon: '↗' },
  { href: '/settings', label: 'Settings', icon: '⚙' },
];

const NEXT_THEME: Record<Theme, Theme> = { system: 'dark', dark: 'light', light: 'system' };

export function Shell(props: { children: JSX.Element }): JSX.Element {
  const summary = gameStats;
  return (
    <>
      <header class="topbar">
        <A class="brand" href="/dashboard">
          <img src="/icon.svg" alt="" width="28" height="28" />
          <span>Task Service</span>
        </A>
        <nav class="primary-nav" aria-label="Main">
          <For each={NAV}>
            {(item) => (
              <A href={item.href} activeClass="active" end={item.href === '/dashboard'}>
                <span class="icon" aria-hidden="true">
                  {item.icon}
                </span>
                <span>{item.label}</span>
              </A>
            )}
          </For>
          <Show when={session.me()?.isAdmin}>
            <A href="/admin" activeClass="active">
              <span class="icon" aria-hidden="true">
                ★
              </span>
              <span>Admin</span>
            </A>
          </Show>
        </nav>
        <span class="spacer" />
        <Show when={summary()}>
          {(s) => (
            <span class="stats-pill" data-testid="stats-pill" aria-label={`Level ${s().level}, ${s().coins} coins, streak ${s().streak.current} days`}>
              <span title="Streak">
                Streak {s().streak.current}
                <span class="label"> {s().streak.current === 1 ? 'day' : 'days'}</span>
              </span>
              <span title="Coins">
                {s().coins}
                <span class="label"> coins</span>
              </span>
              <span title="Level">Lv {s().level}</span>
            </span>
          )}
        </Show>
        <button class="ghost icon-only" type="button" onClick={() => setTheme(NEXT_THEME[theme()])} aria-label={`Colour theme: ${theme()}. Switch to ${NEXT_THEME[theme()]}`} title={`Theme: ${theme()}`}>
          {theme() === 'dark' ? '☾' : theme() === 'light' ? '☼' : '◐'}
        </button>
        <button class="ghost small" type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main class="main" id="main" tabindex="-1">
        {props.children}
      </main>
      <footer class="footer">
        <span>Signed in as {session.me()?.email}</span>
        {/* Full page loads: the legal pages are rendered by the server, not by this app. */}
        <a href="/impressum" rel="external">
          Impressum
        </a>
        <a href="/datenschutz" rel="external">
          Datenschutz
        </a>
      </footer>
      <div class="toasts" role="status" aria-live="polite">
        <For each={toasts()}>
          {(t) => (
            <div class="toast" classList={{ error: t.kind === 'error' }}>
              <span>{t.text}</span>
              <Show when={t.action}>
                {(a) => (
                  <button
                    type="button"
                    onClick={() => {
                      a().run();
                      dismiss(t.id);
                    }}
                  >
                    {a().label}
                  </button>
                )}
              </Show>
            </div>
          )}
        </For>
      </div>
    </>
  );
}
