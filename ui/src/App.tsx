import { Navigate, Route, Router, useLocation, useNavigate, type RouteSectionProps } from '@solidjs/router';
import { createEffect, ErrorBoundary, lazy, Match, onCleanup, Show, Suspense, Switch, type JSX } from 'solid-js';
import { ApiError, get, onAuthError } from './lib/api.ts';
import { session } from './lib/session.ts';
import { Shell } from './components/Shell.tsx';
import { ErrorScreen, Spinner } from './components/ui.tsx';

// Route-level code splitting: only the shell is in the initial bundle (budget in vite.config.ts).
const Login = lazy(() => import('./pages/Login.tsx'));
const SecondFactor = lazy(() => import('./pages/SecondFactor.tsx'));
const Onboarding = lazy(() => import('./pages/Onboarding.tsx'));
const Dashboard = lazy(() => import('./pages/Dashboard.tsx'));
const Tasks = lazy(() => import('./pages/Tasks.tsx'));
const Topics = lazy(() => import('./pages/Topics.tsx'));
const Progress = lazy(() => import('./pages/Progress.tsx'));
const Settings = lazy(() => import('./pages/Settings.tsx'));
const Admin = lazy(() => import('./pages/Admin.tsx'));
const Wishlist = lazy(() => import('./pages/Wishlist.tsx'));
const NotFound = lazy(() => import('./pages/NotFound.tsx'));

export function Loading(): JSX.Element {
  return (
    <div class="empty" role="status">
      <Spinner /> <span>Loading…</span>
    </div>
  );
}

/** Where a signed-in browser must go before anything else (forced 2FA setup or this session's 2FA check). */
async function pendingSecondFactorPage(): Promise<string> {
  try {
    const s = await get('/api/auth/2fa/status');
    return s.pendingPage ?? '/setup/2fa';
  } catch {
    return '/setup/2fa';
  }
}

/** Pages that need a signed-in user whose second factor is settled. */
function Protected(props: RouteSectionProps): JSX.Element {
  const navigate = useNavigate();
  const location = useLocation();
  createEffect(() => {
    // Offline or the server down: the screen below says so; nothing to redirect.
    if (session.me.loading || session.me.error) return;
    const me = session.me();
    if (me === null) navigate(`/login?next=${encodeURIComponent(location.pathname + location.search)}`, { replace: true });
    else if (me && !me.secondFactorOk) void pendingSecondFactorPage().then((p) => navigate(p, { replace: true }));
  });
  return (
    <Show
      when={!session.me.error}
      fallback={
        <main class="main" id="main">
          <ErrorScreen error={session.me.error} reset={() => void session.refetch()} />
        </main>
      }
    >
      <Show when={session.me()?.secondFactorOk} fallback={<Loading />}>
        <Shell>{props.children}</Shell>
      </Show>
    </Show>
  );
}

function Root(props: RouteSectionProps): JSX.Element {
  const navigate = useNavigate();
  const location = useLocation();
  // Any API call that finds the session gone or the second factor missing sends the user on.
  const off = onAuthError((err: ApiError) => {
    if (err.status === 401) {
      session.mutate(null);
      if (!location.pathname.startsWith('/login')) navigate(`/login?next=${encodeURIComponent(location.pathname)}`, { replace: true });
    } else if (err.code === 'SECOND_FACTOR_REQUIRED') {
      void pendingSecondFactorPage().then((p) => navigate(p, { replace: true }));
    }
  });
  onCleanup(off);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <ErrorBoundary fallback={(err, reset) => <ErrorPage error={err} reset={reset} />}>
        <Suspense fallback={<Loading />}>{props.children}</Suspense>
      </ErrorBoundary>
    </>
  );
}

function ErrorPage(props: { error: unknown; reset: () => void }): JSX.Element {
  return (
    <main class="main" id="main">
      <ErrorScreen error={props.error} reset={props.reset} />
    </main>
  );
}

function Home(): JSX.Element {
  return (
    <Switch fallback={<Loading />}>
      <Match when={session.me() === null}>
        <Navigate href="/login" />
      </Match>
      <Match when={session.me()}>
        <Navigate href="/dashboard" />
      </Match>
    </Switch>
  );
}

export function App(): JSX.Element {
  return (
    <Router root={Root}>
      <Route path="/" component={Home} />
      <Route path="/login" component={Login} />
      <Route path="/login/2fa" component={() => <SecondFactor mode="verify" />} />
      <Route path="/setup/2fa" component={() => <SecondFactor mode="setup" />} />
      <Route path="/" component={Protected}>
        <Route path="/onboarding" component={Onboarding} />
        <Route path="/dashboard" component={Dashboard} />
        <Route path="/tasks" component={Tasks} />
        <Route path={['/topics', '/topics/:id']} component={Topics} />
        <Route path={['/achievements', '/review', '/stats', '/progress']} component={Progress} />
        <Route path={['/settings', '/settings/:section', '/api-keys']} component={Settings} />
        <Route path="/wishlist" component={Wishlist} />
        <Route path="/admin" component={Admin} />
        <Route path="*404" component={NotFound} />
      </Route>
    </Router>
  );
}
