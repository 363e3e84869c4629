import { useLocation, useParams } from '@solidjs/router';
import { lazy, Match, Switch, type JSX } from 'solid-js';
import { Tabs } from '../components/ui.tsx';

const Profile = lazy(() => import('./settings/Profile.tsx'));
const Notifications = lazy(() => import('./settings/Notifications.tsx'));
const Webhooks = lazy(() => import('./settings/Webhooks.tsx'));
const Calendar = lazy(() => import('./settings/Calendar.tsx'));
const Security = lazy(() => import('./settings/Security.tsx'));
const ApiKeys = lazy(() => import('./settings/ApiKeys.tsx'));
const Vacation = lazy(() => import('./settings/Vacation.tsx'));
const ConnectApp = lazy(() => import('./settings/ConnectApp.tsx'));
const YourData = lazy(() => import('./settings/YourData.tsx'));

const SECTIONS = [
  { href: '/settings', label: 'Profile' },
  { href: '/settings/notifications', label: 'Notifications' },
  { href: '/settings/vacation', label: 'Vacation' },
  { href: '/settings/integrations', label: 'Webhooks' },
  { href: '/settings/calendar', label: 'Calendar' },
  { href: '/settings/connect', label: 'Connect an app' },
  { href: '/settings/security', label: 'Security' },
  { href: '/settings/api-keys', label: 'API keys' },
  { href: '/settings/data', label: 'Your data' },
];

export default function Settings(): JSX.Element {
  const params = useParams<{ section?: string }>();
  const location = useLocation();
  const section = () => (location.pathname === '/api-keys' ? 'api-keys' : (params.section ?? 'profile'));
  return (
    <>
      <div class="page-head">
        <h1>Settings</h1>
      </div>
      <Tabs items={SECTIONS} current={section() === 'profile' ? '/settings' : `/settings/${section()}`} />
      <Switch fallback={<p>Unknown settings section.</p>}>
        <Match when={section() === 'profile'}>
          <Profile />
        </Match>
        <Match when={section() === 'notifications'}>
          <Notifications />
        </Match>
        <Match when={section() === 'vacation' || section() === 'vacation-mode'}>
          <Vacation />
        </Match>
        <Match when={section() === 'integrations' || section() === 'webhooks'}>
          <Webhooks />
        </Match>
        <Match when={section() === 'calendar'}>
          <Calendar />
        </Match>
        <Match when={section() === 'connect'}>
          <ConnectApp />
        </Match>
        <Match when={section() === 'security'}>
          <Security />
        </Match>
        <Match when={section() === 'api-keys'}>
          <ApiKeys />
        </Match>
        <Match when={section() === 'data'}>
          <YourData />
        </Match>
      </Switch>
    </>
  );
}
