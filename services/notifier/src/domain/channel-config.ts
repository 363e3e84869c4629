import type { NotificationChannelType } from '@tasksvc/proto';

/** Which configuration fields are secrets (stored encrypted, never returned). */
export const SECRET_FIELDS: Record<NotificationChannelType, readonly string[]> = {
  push: [],
  ntfy: ['token'],
  pushover: ['appToken', 'userKey'],
  telegram: ['botToken'],
  email: [],
  'http-alert': ['secret'],
};

/** Secrets a channel cannot work without (after merging with what is stored). */
export const REQUIRED_SECRETS: Record<NotificationChannelType, readonly string[]> = {
  push: [],
  ntfy: [],
  pushover: ['appToken', 'userKey'],
  telegram: ['botToken'],
  email: [],
  'http-alert': [],
};

export type Scalar = string | number | boolean | null;

/**
 * Split a validated input into public settings and secrets, merged with the stored secrets: an
 * omitted secret keeps its stored value, `null` removes it. Lists required secrets still missing.
 */
export function mergeChannelInput(
  type: NotificationChannelType,
  input: Record<string, unknown>,
  storedSecrets: Record<string, string>,
): { config: Record<string, Scalar>; secrets: Record<string, string>; newSecrets: string[]; missing: string[] } {
  const secretNames = SECRET_FIELDS[type];
  const config: Record<string, Scalar> = {};
  const secrets: Record<string, string> = { ...storedSecrets };
  const newSecrets: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (secretNames.includes(key)) {
      if (value === null) delete secrets[key];
      else if (typeof value === 'string') {
        secrets[key] = value;
        newSecrets.push(key);
      }
    } else config[key] = (value ?? null) as Scalar;
  }
  return { config, secrets, newSecrets, missing: REQUIRED_SECRETS[type].filter((k) => !secrets[k]) };
}

/** `token` → `hasToken` */
export function hasFlag(field: string): string {
  return `has${field[0]!.toUpperCase()}${field.slice(1)}`;
}

/** The settings as the client may see them: public fields plus a has… flag per secret. */
export function redactedConfig(type: NotificationChannelType, config: Record<string, Scalar>, secretNames: readonly string[]): Record<string, Scalar> {
  const out: Record<string, Scalar> = { ...config };
  for (const f of SECRET_FIELDS[type]) out[hasFlag(f)] = secretNames.includes(f);
  return out;
}
