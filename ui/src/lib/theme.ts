import { createSignal } from 'solid-js';

export type Theme = 'system' | 'light' | 'dark';
const KEY = 'theme';

function read(): Theme {
  const v = localStorage.getItem(KEY);
  return v === 'light' || v === 'dark' ? v : 'system';
}

const [theme, setThemeSignal] = createSignal<Theme>(read());
export { theme };

export function applyTheme(t: Theme = theme()): void {
  if (t === 'system') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', t);
}

export function setTheme(t: Theme): void {
  if (t === 'system') localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, t);
  setThemeSignal(t);
  applyTheme(t);
}
