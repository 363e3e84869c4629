import { A, useLocation } from '@solidjs/router';
import { createEffect, ErrorBoundary, For, on, onCleanup, Show, Suspense, type JSX } from 'solid-js';
import { Icon, type IconName } from './icons.tsx';
import { session, signOut } from '../lib/session.ts';
import { setTheme, theme, type Theme } from '../lib/theme.ts';
import { dismiss, holdToast, runToastAction, toasts } from '../lib/toast.ts';
import { connection } from '../lib/connection.ts';
import { fromCache } from '../lib/cache.ts';
import { dismissNotices, notices, waiting } from '../lib/outbox.ts';
import { gameStats } from '../lib/game.ts';
import { ConfirmDialog } from './ConfirmDialog.tsx';
import { cssHeight, ErrorScreen, Spinner } from './ui.tsx';

const NAV: { href: string; label: string; icon: IconName }[] = [
  { href: '/dashboard', label: 'Today', icon: 'today' },
  { href: '/tasks', label: 'Tasks', icon: 'tasks' },
  { href: '/topics', label: 'Topics', icon: 'topics' },
  { href: '/stats', label: 'Progress', icon: 'progress' },
  { href: '/settings', label: 'Settings', icon: 'settings' },
];

const NEXT_THEME: Record<Theme, Theme> = { system: 'dark', dark: 'light', light: 'system' };

/**
 * A toast that comes up over the control in focus (the box just ticked, the quest card's Undo) moves
 * the page instead: the control scrolls up above the toasts (scroll-padding-bottom keeps their height clear).
 */
function keepFocusClear(toasts: HTMLElement): void {
  const a = document.activeElement;
  if (!(a instanceof HTMLElement) || a === document.body || toasts.contains(a)) return;
  const r = a.getBoundingClientRect();
  const t = toasts.getBoundingClientRect();
  if (t.height > 0 && r.bottom > t.top && r.top < t.bottom && r.right > t.left && r.left < t.right) a.scrollIntoView({ block: 'nearest' });
}

export function Shell(props: { children: JSX.Element }): JSX.Element {
  const summary = gameStats;
  const location = useLocation();
  // Going elsewhere clears a failed screen.
  let resetScreen: (() => void) | undefined;
  createEffect(on(() => location.pathname, () => resetScreen?.(), { defer: true }));
  // Back online: a screen that failed for want of a network loads again by itself.
  onCleanup(connection.onReconnect(() => resetScreen?.()));
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
                  <Icon name={item.icon} />
                </span>
                <span>{item.label}</span>
              </A>
            )}
          </For>
          <Show when={session.me()?.isAdmin}>
            <A href="/admin" activeClass="active">
              <span class="icon" aria-hidden="true">
                <Icon name="admin" />
              </span>
              <span>Admin</span>
            </A>
          </Show>
        </nav>
        <span class="spacer" />
        {/* Today shows these figures in its own card: once on a screen is enough. */}
        <Show when={location.pathname !== '/dashboard' && summary()}>
          {(s) => (
            <span class="stats-pill" data-testid="stats-pill" aria-label={`Level ${s().level}, ${s().coins} coins, streak ${s().streak.current} days`}>
              <span title="Streak">
                Streak {s().streak.current}
                <span class="label"> {s().streak.current === 1 ? 'day' : 'days'}</span>
              </span>
              {/* "coins" stays on phones: a bare number next to the streak says nothing */}
              <span title="Coins">{s().coins} coins</span>
              <span title="Level">Lv {s().level}</span>
            </span>
          )}
        </Show>
        <button class="ghost icon-only" type="button" onClick={() => setTheme(NEXT_THEME[theme()])} aria-label={`Colour theme: ${theme()}. Switch to ${NEXT_THEME[theme()]}`} title={`Theme: ${theme()}`}>
          <Icon name={theme() === 'dark' ? 'moon' : theme() === 'light' ? 'sun' : 'contrast'} />
        </button>
        <button class="ghost small" type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main class="main" id="main" tabindex="-1">
        <Show when={!connection.online() || fromCache()}>
          <div class="banner info" role="status" data-testid="offline-banner">
            {connection.online() ? 'The server cannot be reached.' : 'You are offline.'} You see what was loaded before; your changes are kept on this device and sent when the connection is back.
          </div>
        </Show>
        {/* The write queue (lib/outbox.ts): what waits, and what the server refused or overruled. */}
        <Show when={waiting() > 0}>
          <div class="banner info" role="status" data-testid="pending-changes">
            {waiting() === 1 ? '1 change waiting' : `${waiting()} changes waiting`} to be sent{connection.online() ? '…' : ' when you are online.'}
          </div>
        </Show>
        <Show when={notices().length > 0}>
          <div class="banner warn" role="alert" data-testid="sync-notices">
            <ul class="notices">
              <For each={notices()}>{(n) => <li>{n}</li>}</For>
            </ul>
            <button type="button" class="small" onClick={dismissNotices}>
              OK
            </button>
          </div>
        </Show>
        {/* A screen that fails (its chunk did not load, offline) keeps the navigation around it. */}
        <ErrorBoundary
          fallback={(err, reset) => {
            resetScreen = reset;
            return <ErrorScreen error={err} reset={reset} />;
          }}
        >
          <Suspense fallback={<Spinner />}>{props.children}</Suspense>
        </ErrorBoundary>
      </main>
      <footer class="footer">
        <span>Signed in as {session.me()?.email || session.me()?.name}</span>
        {/* Full page loads: the legal pages are rendered by the server, not by this app. */}
        <a href="/impressum" rel="external">
          Impressum
        </a>
        <a href="/datenschutz" rel="external">
          Datenschutz
        </a>
      </footer>
      <ConfirmDialog />
      <div class="toasts" role="status" aria-live="polite" ref={(el) => cssHeight(el, '--toasts-h', () => keepFocusClear(el))}>
        <For each={toasts()}>
          {(t) => (
            <div
              class="toast"
              data-toast-id={t.id}
              classList={{ error: t.kind === 'error' }}
              onPointerEnter={() => holdToast(t.id, 'pointer', true)}
              onPointerLeave={() => holdToast(t.id, 'pointer', false)}
              onFocusIn={() => holdToast(t.id, 'focus', true)}
              onFocusOut={(e) => !e.currentTarget.contains(e.relatedTarget as Node | null) && holdToast(t.id, 'focus', false)}
              onKeyDown={(e) => {
                if (e.key !== 'Escape') return;
                e.preventDefault();
                dismiss(t.id);
              }}
            >
              <span>{t.text}</span>
              <Show when={t.action}>
                {(a) => (
                  <button
                    type="button"
                    ref={(el) => t.focus && queueMicrotask(() => el.focus())}
                    onClick={() => runToastAction(t.id)}
                  >
                    {a().label}
                  </button>
                )}
              </Show>
              <Show when={t.action}>
                <button type="button" class="ghost icon-only" aria-label="Dismiss" onClick={() => dismiss(t.id)}>
                  <Icon name="close" size={16} />
                </button>
              </Show>
            </div>
          )}
        </For>
      </div>
    </>
  );
}
