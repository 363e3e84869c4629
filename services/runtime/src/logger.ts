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
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: redactingSerializers,
    redact: { paths: ['*.authorization', '*.cookie', '*.password', '*.secret', '*.token'], censor: '[redacted]' },
    ...(tracingOn() ? { mixin: () => activeTraceIds() ?? {} } : {}),
  };
  if (opts.pretty && prettyAvailable()) return pino({ ...options, transport: { target: 'pino-pretty', options: PRETTY_OPTIONS } });
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** Pretty output only for a person at a terminal; production and pipes get JSON. */
export function prettyLogs(config: { RUNTIME_ENV: string }, stream: { isTTY?: boolean } = process.stdout): boolean {
  return config.RUNTIME_ENV !== 'production' && stream.isTTY === true;
}
