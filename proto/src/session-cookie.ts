/**
 * The browser session cookie: set by the auth service (Auth.js and the passkey sign-in), read by the
 * auth service, recognised by the gateway (the cross-origin check, identity look-ups, and the rename
 * below), so its names live here.
 *
 * Over https it is `__Host-authjs.session-token` (issue 56 #13): a browser stores a `__Host-` cookie
 * only from an https page, with Secure, Path=/ and no Domain, so neither a plain-http page nor a
 * sibling subdomain can plant or overwrite it (cookie tossing). Over plain http (development on a
 * loopback name, tests) no prefix can be used: `authjs.session-token`, without Secure, as before.
 *
 * Releases before issue 56 named it `__Secure-authjs.session-token` over https. That name is still
 * read (`__Host-` wins when a request carries both), and the gateway re-issues such a session under
 * `__Host-` and clears the old name on the next request, so the rename signs nobody out.
 */
export const SESSION_COOKIE = 'authjs.session-token';
export const HOST_SESSION_COOKIE = '__Host-authjs.session-token';
/** the https name before issue 56: read, and moved to `HOST_SESSION_COOKIE` on the next request */
export const LEGACY_SESSION_COOKIE = '__Secure-authjs.session-token';

/** Any of the three names among a Cookie header's cookies (the gateway's test for "carries a session"). */
export const SESSION_COOKIE_RE = /(?:^|;\s*)(?:__Host-|__Secure-)?authjs\.session-token=/;

/** Prefixed, Secure cookies when the sign-in (callback) origin is https, as Auth.js decides. */
export function secureSessionCookies(authCallbackUrl: string): boolean {
  return new URL(authCallbackUrl).protocol === 'https:';
}

export function sessionCookieName(secure: boolean): string {
  return secure ? HOST_SESSION_COOKIE : SESSION_COOKIE;
}

/** Parse a Cookie header into name → value (first occurrence wins, values URI-decoded when valid). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (!name || out.has(name)) continue;
    try {
      out.set(name, decodeURIComponent(value));
    } catch {
      out.set(name, value);
    }
  }
  return out;
}

/**
 * The session token a request carries, if any. Over https only the prefixed names count (`__Host-`,
 * else the legacy `__Secure-`): a browser accepts either only with Secure from an https page, whereas
 * the plain name can be planted by a plain-http page or a sibling subdomain. Over http only the plain name.
 */
export function sessionTokenFromCookie(header: string | undefined, secure: boolean): string | null {
  const cookies = parseCookies(header);
  if (!secure) return cookies.get(SESSION_COOKIE) ?? null;
  return cookies.get(HOST_SESSION_COOKIE) ?? cookies.get(LEGACY_SESSION_COOKIE) ?? null;
}

/** The token under the legacy `__Secure-` name when it is the one a request is signed in with (https, no `__Host-` cookie). */
export function legacySessionToken(header: string | undefined, secure: boolean): string | null {
  if (!secure) return null;
  const cookies = parseCookies(header);
  return cookies.has(HOST_SESSION_COOKIE) ? null : (cookies.get(LEGACY_SESSION_COOKIE) ?? null);
}

/** A Set-Cookie value for a session cookie (HttpOnly, SameSite=Lax, whole site, no Domain). */
export function serializeSessionCookie(token: string, expires: Date, secure: boolean): string {
  return [`${sessionCookieName(secure)}=${token}`, 'Path=/', `Expires=${expires.toUTCString()}`, 'HttpOnly', 'SameSite=Lax', ...(secure ? ['Secure'] : [])].join('; ');
}

/** A Set-Cookie value that removes a session cookie (by default this deployment's name). */
export function clearSessionCookie(secure: boolean, name = sessionCookieName(secure)): string {
  return `${name}=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie values that move a legacy-named session to `__Host-` (same token and expiry) and remove the old name. */
export function renamedSessionCookies(token: string, expires: Date): string[] {
  return [serializeSessionCookie(token, expires, true), clearSessionCookie(true, LEGACY_SESSION_COOKIE)];
}
