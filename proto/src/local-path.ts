/**
 * Where a browser may be sent after signing in: only a path on the app's own origin (#19.7). Used by
 * the auth service (Auth.js's redirect callback) and the login page, so both decide the same way.
 * No imports: the UI bundles this file.
 */

/** The same-origin path (with query and fragment) `input` denotes, or null when it could leave the site. */
export function sameOriginPath(input: string | null | undefined, origin: string): string | null {
  if (!input) return null;
  // Browsers read `\` as `/` and drop tabs and newlines, so `/\evil` or `/\t/evil` would become `//evil`.
  if (input.includes('\\') || [...input].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return null;
  let base: URL;
  let url: URL;
  try {
    base = new URL(origin);
    url = new URL(input, base);
  } catch {
    return null;
  }
  if (url.origin !== base.origin || (url.protocol !== 'http:' && url.protocol !== 'https:')) return null;
  // A relative input must be a path (not `evil.example` or `javascript:`…); an absolute one is this origin's.
  if (!input.startsWith('/') && !input.toLowerCase().startsWith(`${base.origin.toLowerCase()}/`) && input.toLowerCase() !== base.origin.toLowerCase()) return null;
  // `//host` is protocol-relative; encoded slashes and backslashes turn into one when decoded once more.
  if (url.pathname.startsWith('//') || /%(2f|5c)/i.test(url.pathname)) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}
