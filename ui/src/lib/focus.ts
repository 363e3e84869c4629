/**
 * Focus an element that is about to appear (a row that comes back after Undo, once its list has
 * reloaded), unless the person has moved on to another control meanwhile. Gives up after 10 s.
 */
export function focusWhenPresent(selector: string): void {
  const idle = () => !document.activeElement || document.activeElement === document.body || document.activeElement.id === 'main' || document.activeElement.closest('.toast') !== null;
  const tryFocus = () => {
    const el = document.querySelector<HTMLElement>(selector);
    if (!el) return false;
    if (idle()) el.focus();
    return true;
  };
  if (tryFocus()) return;
  const obs = new MutationObserver(() => tryFocus() && stop());
  const timer = setTimeout(() => stop(), 10_000);
  const stop = () => {
    obs.disconnect();
    clearTimeout(timer);
  };
  obs.observe(document.body, { childList: true, subtree: true });
}
