import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs, one line per event, every line naming its service (and request id, via child loggers). */
export function createLogger(service: string, level: string = 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['*.authorization', '*.cookie', '*.password', '*.secret', '*.token'], censor: '[redacted]' },
  });
}
