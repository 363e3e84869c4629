import { render } from 'solid-js/web';
import { App } from './App.tsx';
import { applyTheme } from './lib/theme.ts';
import './styles.css';

applyTheme();
render(() => <App />, document.getElementById('root')!);

// The service worker exists for browser push (it caches nothing), so registering it early is harmless.
if ('serviceWorker' in navigator) {
  window.addEventListener('load', () => {
    navigator.serviceWorker.register('/sw.js').catch(() => undefined);
  });
}
