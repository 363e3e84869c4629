/**
 * The origins sign-in answers on. Normally exactly AUTH_CALLBACK_URL's. When that is a loopback
 * address (local development), this machine under any of its loopback names on the same port is the
 * same app: the address a terminal prints (http://127.0.0.1:3000 with HOST=127.0.0.1) must sign in
 * as well as http://localhost:3000 does, and each keeps its own cookies (a browser never sends
 * localhost's cookies to 127.0.0.1), so sign-in runs on the origin the browser is at.
 */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** Every origin sign-in may run on for this callback URL (the configured one first). */
export function signInOrigins(callbackUrl: string): string[] {
  const url = new URL(callbackUrl);
  if (!isLoopback(url.hostname)) return [url.origin];
  const others = LOOPBACK_NAMES.map((name) => `${url.protocol}//${name}${url.port ? `:${url.port}` : ''}`);
  return [url.origin, ...others.filter((o) => o !== url.origin)];
}

/** The origin a request to sign-in runs on: its Host when that is one of `signInOrigins`, else the configured one. */
export function signInOrigin(callbackUrl: string, host: string | undefined): string {
  const origins = signInOrigins(callbackUrl);
  if (!host) return origins[0]!;
  const asked = `${new URL(callbackUrl).protocol}//${host.toLowerCase()}`;
  return origins.includes(asked) ? asked : origins[0]!;
}
