/** What a channel declares about its secrets (channels/channel.ts). */
export interface SecretDeclaration {
  secretFields: readonly string[];
  requiredSecrets: readonly string[];
}

export type Scalar = string | number | boolean | null;

/**
 * Split a validated input into public settings and secrets, merged with the stored secrets: an
 * omitted secret keeps its stored value, `null` removes it. Lists required secrets still missing.
 */
export function mergeChannelInput(
  channel: SecretDeclaration,
  input: Record<string, unknown>,
  storedSecrets: Record<string, string>,
): { config: Record<string, Scalar>; secrets: Record<string, string>; newSecrets: string[]; missing: string[] } {
  const secretNames = channel.secretFields;
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
  return { config, secrets, newSecrets, missing: channel.requiredSecrets.filter((k) => !secrets[k]) };
}

/** `token` → `hasToken` */
export function hasFlag(field: string): string {
  return `has${field[0]!.toUpperCase()}${field.slice(1)}`;
}

/** The settings as the client may see them: public fields plus a has… flag per secret. */
export function redactedConfig(secretFields: readonly string[], config: Record<string, Scalar>, storedSecrets: readonly string[]): Record<string, Scalar> {
  const out: Record<string, Scalar> = { ...config };
  for (const f of secretFields) out[hasFlag(f)] = storedSecrets.includes(f);
  return out;
}
