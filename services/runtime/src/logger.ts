import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { redactingSerializers } from './redact.ts';
import { activeTraceIds, tracingOn } from './tracing.ts';

export type { Logger };

export interface LoggerOpts {
  /** Human-readable lines via pino-pretty; callers pass false in production (JSON for log collectors). */
  pretty?: boolean;
  /** where JSON lines go (default stdout); tests read them back */
  destination?: DestinationStream;
}

/** pino-pretty is a development dependency: an installation without it logs JSON. */
function prettyAvailable(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** One readable line per event; a request line reads `GET /api/tasks → 200 in 4 ms`. */
const PRETTY_OPTIONS = {
  translateTime: 'SYS:HH:MM:ss',
  singleLine: true,
  ignore: 'pid,hostname,service,reqId,req,res,responseTime',
  messageFormat: '[{service}] {if req.method}{req.method} {req.url} → {res.statusCode} in {responseTime} ms {end}{msg}',
};

/** Fields that are secrets wherever they stand one level down in a logged object (`headers.authorization`, `body.password`). */
const SECRET_FIELDS = ['authorization', 'cookie', 'password', 'secret', 'token'];
const CENSOR = '[redacted]';

/**
 * The logged object with every SECRET_FIELDS value one level down replaced by
 * `[redacted]`, on a copy; the object itself when there is none (the usual line: no copy). pino's own
 * `redact` option did the same through a wildcard path at ~9 µs a line, most of a request line's cost.
 * A copied value keeps its prototype and own properties, so an error still serializes as an error.
 */
export function censorSecrets<T extends object>(obj: T): T {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(obj)) {
    const v = (obj as Record<string, unknown>)[key];
    if (!v || typeof v !== 'object' || Array.isArray(v)) continue;
    const found = SECRET_FIELDS.filter((f) => (v as Record<string, unknown>)[f] !== undefined);
    if (found.length === 0) continue;
    const copy = Object.create(Object.getPrototypeOf(v), Object.getOwnPropertyDescriptors(v)) as Record<string, unknown>;
    // V8's `stack` is an accessor reading the original error's own slot: copied, it reads nothing
    if (v instanceof Error) Object.defineProperty(copy, 'stack', { value: v.stack, writable: true, configurable: true });
    for (const f of found) Object.defineProperty(copy, f, { value: CENSOR, enumerable: true, writable: true, configurable: true });
    (out ??= { ...(obj as Record<string, unknown>) })[key] = copy;
  }
  return (out ?? obj) as T;
}

let second = NaN;
let secondText = '';
/**
 * `now` (ms since the epoch) as toISOString writes it, the date and time of its second formatted once
 * per second (toISOString at every log line was a fifth of a request line's cost).
 */
export function isoMillis(now: number): string {
  const s = Math.floor(now / 1000);
  if (s !== second) {
    second = s;
    secondText = new Date(s * 1000).toISOString().slice(0, -4); // up to the seconds' dot
  }
  const ms = now - s * 1000;
  return `${secondText}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
}

const isoTime = () => `,"time":"${isoMillis(Date.now())}"`;

/** A line waits at most this long for the lines after it. */
const LOG_FLUSH_MS = 200;
const LOG_CHUNK_BYTES = 4096;
/** What a stdout that takes nothing (a stuck pipe) may hold before lines are dropped rather than memory grow. */
const LOG_BUFFER_LIMIT = 16 * 1024 * 1024;

/**
 * Standard output written in chunks of a few kilobytes, a line waiting at most LOG_FLUSH_MS: written a
 * line at a time (pino's default, a thread-pool write each), request lines were the largest cost of
 * logging at info. pino writes what is left when the process exits, so only a kill -9 loses the last
 * moment's lines. The flush is timed from the first line waiting, not on a period: sonic-boom's
 * periodicFlush wrote an empty chunk through the thread pool five times a second in every process,
 * idle or not (tools/bench/idle.ts).
 */
function stdoutInChunks(): DestinationStream {
  const out = pino.destination({ dest: 1, minLength: LOG_CHUNK_BYTES, maxLength: LOG_BUFFER_LIMIT });
  // sonic-boom 4 keeps what waits in _len; without it (another version), its periodic flush as before
  const waiting = () => (out as unknown as { _len?: number })._len;
  if (typeof waiting() !== 'number') return pino.destination({ dest: 1, minLength: LOG_CHUNK_BYTES, periodicFlush: LOG_FLUSH_MS, maxLength: LOG_BUFFER_LIMIT });
  let timer: NodeJS.Timeout | undefined;
  const later = () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      out.flush();
      // a chunk still being written keeps what came meanwhile: look again
      if (waiting()! > 0) later();
    }, LOG_FLUSH_MS).unref();
  };
  const write = out.write.bind(out);
  out.write = (line: string) => {
    const ok = write(line);
    if (waiting()! > 0) later();
    return ok;
  };
  return out;
}

/**
 * JSON logs, one line per event, every line naming its service (and request id, via child loggers);
 * pretty-printed when asked to (a terminal outside production, see `prettyLogs`). With tracing on
 * (started before the logger is made), every line written inside a trace carries its `traceId` and
 * `spanId`; the gateway's request id then is the trace id too (gateway/src/app.ts).
 */
export function createLogger(service: string, level: string = 'info', opts: LoggerOpts = {}): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    timestamp: isoTime,
    serializers: redactingSerializers,
    // child bindings are not passed through it: they are the logger's own (service, request id), never secrets
    formatters: { log: censorSecrets },
    ...(tracingOn() ? { mixin: () => activeTraceIds() ?? {} } : {}),
  };
  if (opts.pretty && prettyAvailable()) return pino({ ...options, transport: { target: 'pino-pretty', options: PRETTY_OPTIONS } });
  return pino(options, opts.destination ?? stdoutInChunks());
}

/** Pretty output only for a person at a terminal; production and pipes get JSON. */
export function prettyLogs(config: { RUNTIME_ENV: string }, stream: { isTTY?: boolean } = process.stdout): boolean {
  return config.RUNTIME_ENV !== 'production' && stream.isTTY === true;
}
