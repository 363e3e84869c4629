/* Service worker: keeps the app itself (shell, styles, every route chunk) available offline and
   across deploys, and shows browser push notifications. The worker never caches /api/: the app keeps
   its last answers itself (IndexedDB, ui/src/lib/cache.ts) and says when it shows them offline. */

// Filled in by the build (vite.config.ts, precompress-and-precache): the shell and every hashed asset.
const PRECACHE = [];
// One cache per build: the list names hashed files, so a new build gets a new cache name.
const CACHE = `app-${PRECACHE.join('|').split('').reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7) >>> 0}`;
const SHELL = '/index.html';
const OFFLINE = '/offline.html';
// Unhashed files the shell shows (the brand icon): fresh from the network, the cached copy offline.
const SHELL_FILES = ['/icon.svg'];

self.addEventListener('install', (event) => {
  // One missing file must not keep the worker (and push notifications) from installing.
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => Promise.allSettled([SHELL, ...SHELL_FILES, ...PRECACHE].map((u) => cache.add(new Request(u, { cache: 'reload' })))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  // Old builds' caches go once this build is active; their pages reload into this one on navigation.
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('app-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin || url.pathname.startsWith('/api/')) return;
  if (req.mode === 'navigate') {
    // Network first (the gateway's redirects and fresh HTML win); offline, the cached app shell.
    event.respondWith(
      fetch(req).catch(async () => (await caches.match(SHELL, { cacheName: CACHE })) || (await caches.match(OFFLINE, { cacheName: CACHE })) || Response.error()),
    );
    return;
  }
  if (SHELL_FILES.includes(url.pathname)) {
    event.respondWith(fetch(req).catch(async () => (await caches.match(req, { cacheName: CACHE })) || Response.error()));
    return;
  }
  if (url.pathname.startsWith('/assets/') || url.pathname === OFFLINE) {
    // Hashed files never change: cache first, and keep any not yet cached once fetched.
    event.respondWith(
      caches.match(req, { cacheName: CACHE }).then(
        (hit) =>
          hit ||
          fetch(req).then((res) => {
            if (res.ok) {
              const copy = res.clone();
              event.waitUntil(caches.open(CACHE).then((c) => c.put(req, copy)));
            }
            return res;
          }),
      ),
    );
  }
});

self.addEventListener('push', (event) => {
  let data;
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { title: 'Task Service', body: event.data ? event.data.text() : '' };
  }
  const title = data.title || 'Task Service';
  // A reminder's buttons (Done, Snooze 1 h): each a signed single-use link of this app, POSTed when tapped.
  const actions = Array.isArray(data.actions) ? data.actions.filter((a) => a && typeof a.url === 'string' && a.url.startsWith('/api/reminder-actions/')) : [];
  event.waitUntil(
    self.registration.showNotification(title, {
      body: data.body || '',
      // reminders of different tasks must not replace each other
      tag: data.tag && data.tag !== 'reminder' ? data.tag : undefined,
      icon: '/icon-192.png',
      badge: '/icon-192.png',
      actions: actions.map((a) => ({ action: a.action, title: a.title })),
      data: { url: typeof data.url === 'string' && data.url.startsWith('/') ? data.url : '/dashboard', actions: Object.fromEntries(actions.map((a) => [a.action, a.url])) },
    }),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const actionUrl = event.action && event.notification.data && event.notification.data.actions && event.notification.data.actions[event.action];
  if (actionUrl) {
    // the button does its work without opening the app; only a failure is worth a word
    event.waitUntil(
      fetch(actionUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
        .then(async (res) => {
          if (res.ok) return;
          const body = await res.json().catch(() => ({}));
          await self.registration.showNotification('Task Service', { body: body.message || `That did not work (HTTP ${res.status})`, icon: '/icon-192.png' });
        })
        .catch(() => self.registration.showNotification('Task Service', { body: 'Offline: the reminder was not answered', icon: '/icon-192.png' })),
    );
    return;
  }
  const url = (event.notification.data && event.notification.data.url) || '/dashboard';
  event.waitUntil(
    self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((list) => {
      for (const client of list) {
        if ('focus' in client) {
          client.navigate(url);
          return client.focus();
        }
      }
      return self.clients.openWindow(url);
    }),
  );
});
