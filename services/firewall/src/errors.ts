/**
 * Stable codes of the firewall core's refusals. Every error reply of the socket (and so of the web
 * component, which forwards it) carries one beside the human message, so a client can tell cases
 * apart without parsing text.
 */
export const FIREWALL_ERROR_CODES = [
  /** rules that fail validation (ports, addresses, rule type, custom nft) */
  'INVALID_RULES',
  /** an options change or configuration file the schema refuses */
  'INVALID_OPTIONS',
  /** no configuration file to write or reload */
  'NO_CONFIG_FILE',
  'APPLY_IN_PROGRESS',
  /** accept/rollback without applied rules awaiting confirmation */
  'NOTHING_PENDING',
  /** the kernel refused the ruleset as a whole; the previous one stays */
  'APPLY_REFUSED',
  'RELOAD_FAILED',
  'UNKNOWN_REQUEST',
  /** not JSON, or larger than the socket accepts */
  'BAD_REQUEST',
  /** anything unexpected; the message names the cause */
  'INTERNAL',
] as const;
export type FirewallErrorCode = (typeof FIREWALL_ERROR_CODES)[number];

/** A refusal the caller can act on (bad input, wrong state): its message goes back as it is. */
export class UserError extends Error {
  readonly code: FirewallErrorCode;
  constructor(code: FirewallErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
