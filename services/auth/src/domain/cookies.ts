/** Auth.js's session cookie names; the `__Secure-` form is used when the public origin is https. */
export const SESSION_COOKIE = 'authjs.session-token';
export const SECURE_SESSION_COOKIE = '__Secure-authjs.session-token';

export function sessionCookieName(secure: boolean): string {
  return secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
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
 * The session token a request carries, if any, under the one name this deployment uses. Over https
 * only `__Secure-` counts: a browser accepts that name only with `Secure` from an https page, whereas
 * the plain name can be planted by a plain-http page or a sibling subdomain (cookie tossing).
 */
export function sessionTokenFromCookie(header: string | undefined, secure: boolean): string | null {
  return parseCookies(header).get(sessionCookieName(secure)) ?? null;
}

/** A Set-Cookie value for a session cookie (HttpOnly, SameSite=Lax, whole site). */
export function serializeSessionCookie(token: string, expires: Date, secure: boolean): string {
  return [
    `${sessionCookieName(secure)}=${token}`,
    'Path=/',
    `Expires=${expires.toUTCString()}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

/** A Set-Cookie value that removes the session cookie. */
export function clearSessionCookie(secure: boolean): string {
  return `${sessionCookieName(secure)}=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
