/**
 * Stable error codes shared by every service. Each code maps to exactly one HTTP status here, so
 * the gateway never has to guess and services never talk HTTP.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  UNTRUSTED_HOST: 400,
  /** an import file that cannot be read: wrong format, truncated, invalid dates, unknown encoding, too many rows */
  IMPORT_FILE_INVALID: 400,
  UNAUTHENTICATED: 401,
  CRON_UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  READ_ONLY_KEY: 403,
  SECOND_FACTOR_REQUIRED: 403,
  TOTP_REQUIRED_BY_ADMIN: 403,
  RECENT_AUTH_REQUIRED: 403,
  ADMIN_ONLY: 403,
  NOT_FOUND: 404,
  TASKS_NOT_FOUND: 404,
  TOPICS_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  WISHLIST_NOT_FOUND: 404,
  IMPORT_NOT_FOUND: 404,
  CONFLICT: 409,
  ALREADY_COMPLETED: 409,
  SUBTASKS_OPEN: 409,
  INSUFFICIENT_COINS: 409,
  LINK_EXPIRED: 410,
  /** the import is not in a state that allows this (already running, done, expired…) */
  IMPORT_STATE: 409,
  LIMIT_EXCEEDED: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  PAYLOAD_TOO_LARGE: 413,
  LIMIT_REACHED: 429,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
  DATABASE_UNAVAILABLE: 503,
  TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorIssue {
  /** dotted path of the offending field, e.g. `body.title` (an import file: `Work.csv:12.DATE`) */
  path: string;
  message: string;
  /** an import file's issue: the file (a ZIP's member), its 1-based row or line, and the column or property */
  file?: string;
  row?: number;
  field?: string;
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  issues?: ErrorIssue[];
  /** on the bus only (a reply envelope's error): AppError's retryAfterSeconds; HTTP carries it as Retry-After */
  retryAfterSeconds?: number;
}

/** An expected failure with a stable code. Anything else thrown is an internal error. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly issues: ErrorIssue[] | undefined;
  /** a limit's refusal: seconds until it lets the call through (the gateway's Retry-After) */
  readonly retryAfterSeconds: number | undefined;
  constructor(code: ErrorCode, message: string, issues?: ErrorIssue[], opts: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.issues = issues;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
  toBody(): ErrorBody {
    return this.issues ? { code: this.code, message: this.message, issues: this.issues } : { code: this.code, message: this.message };
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value);
}

/** Turn zod issues into field-path issues; `prefix` names where the value came from (body, query…). */
export function issuesFromZod(
  zodIssues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>,
  prefix?: string,
): ErrorIssue[] {
  return zodIssues.map((i) => {
    const parts = [...(prefix ? [prefix] : []), ...i.path.map((p) => String(p))];
    return { path: parts.join('.') || '(root)', message: i.message };
  });
}
