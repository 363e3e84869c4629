/**
 * Secrets that travel in request URLs never reach the log. The logger's `req` and `url`
 * serializers pass every logged URL through `redactUrl`.
 */

const CENSOR = '[redacted]';

/** Path segments that are secrets themselves: the iCal feed's token is its only authentication. */
const SECRET_PATHS: ReadonlyArray<[RegExp, string]> = [[/^(\/api\/calendar\/)[^/?#]+?(\.ics)?$/i, `$1${CENSOR}$2`]];
/** A path none of SECRET_PATHS can match does not start with this. */
const SECRET_PATH_PREFIX = /^\/api\/calendar\//i;

/** Query parameters that carry credentials or one-time codes (OAuth `code`/`state`, tokens, keys). */
const SECRET_NAMES = 'token|access_token|id_token|refresh_token|code|state|key|api_key|apikey|secret|password|signature|sig|otp|nonce';
const SECRET_PARAMS = new RegExp(`^(${SECRET_NAMES})$`, 'i');
/** A query none of whose parameters is named as a secret, nor has an encoded name (that could decode to one), matches not. */
const MAYBE_SECRET_PARAM = new RegExp(`(?:^|&)(?:${SECRET_NAMES}|[^=&]*[%+][^=&]*)=`, 'i');

/**
 * The path as the router reads it: percent-escapes decoded (`/api/%63alendar/…` is the calendar
 * route), so a secret is found under any spelling. One that cannot be decoded stays as sent.
 */
function routedPath(path: string): string {
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The URL (path and query, as in `req.url`) with every secret replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1 && !url.includes('%') && !SECRET_PATH_PREFIX.test(url)) return url; // the common case: logged for every request
  let path = q === -1 ? url : url.slice(0, q);
  // redacted after decoding: a secret path is logged decoded, with its secret replaced
  const decoded = routedPath(path);
  if (SECRET_PATH_PREFIX.test(decoded)) {
    path = decoded;
    for (const [re, replacement] of SECRET_PATHS) path = path.replace(re, replacement);
  }
  if (q === -1) return path;
  const query = url.slice(q + 1);
  if (!MAYBE_SECRET_PARAM.test(query)) return `${path}?${query}`; // `?limit=50`: logged for every list
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      let name = pair.slice(0, eq);
      try {
        name = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // keep as sent
      }
      return SECRET_PARAMS.test(name) ? `${pair.slice(0, eq)}=${CENSOR}` : pair;
    })
    .join('&');
  return `${path}?${redacted}`;
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number } | null;
}

/** pino serializers: fastify's request shape with the URL redacted, and any top-level `url` field. */
export const redactingSerializers = {
  req: (req: LoggedRequest) => ({
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : req.url,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
  url: (url: unknown) => (typeof url === 'string' ? redactUrl(url) : url),
};
