/**
 * Pure: the generated Secret's key material against what the TaskService's status recorded. The
 * operator generates a key only when no value was ever recorded for it; a recorded key that went
 * missing or changed is reported and waits for the admin (docs/kubernetes.md "Lost keys"): a new
 * AUTH_SECRET signs everyone out, a new TOTP_ENCRYPTION_KEY makes every stored TOTP secret
 * unreadable, a new NATS_PASSWORD locks the running services out of the bus.
 */
import { createHash } from 'node:crypto';
import { GROUP } from './crd.ts';

/** Annotation by which an admin accepts the current values (and new ones for lost keys); the value is the fingerprint the condition names. */
export const ACCEPT_KEYS_ANNOTATION = `${GROUP}/accept-keys`;

/** A short fingerprint of one key's value (base64 data as stored): recorded in status, never the value. */
export const checksum = (base64Value: string): string => createHash('sha256').update(Buffer.from(base64Value, 'base64')).digest('hex').slice(0, 16);

export interface KeyCheck {
  /** checksums of the keys present now */
  present: Record<string, string>;
  /** recorded keys whose value is gone */
  lost: string[];
  /** recorded keys whose value differs from the recorded one */
  changed: string[];
  /** keys never recorded and missing: safe to generate */
  toGenerate: string[];
  /** identifies this mismatch (empty when none): the admin's accept-keys annotation must name it */
  fingerprint: string;
}

export function checkKeys(keys: string[], data: Record<string, string>, recorded: Record<string, string>): KeyCheck {
  const present: Record<string, string> = {};
  const lost: string[] = [];
  const changed: string[] = [];
  const toGenerate: string[] = [];
  for (const k of keys) {
    const v = data[k];
    if (v) present[k] = checksum(v);
    if (!recorded[k]) {
      if (!v) toGenerate.push(k);
    } else if (!v) lost.push(k);
    else if (present[k] !== recorded[k]) changed.push(k);
  }
  const mismatch = [...lost, ...changed].sort();
  const fingerprint = mismatch.length
    ? createHash('sha256')
        .update(JSON.stringify(mismatch.map((k) => [k, recorded[k], present[k] ?? null])))
        .digest('hex')
        .slice(0, 12)
    : '';
  return { present, lost, changed, toGenerate, fingerprint };
}

export interface KeyDecision {
  /** keys to generate now */
  generate: string[];
  /** what status.keyChecksums should say after the generation (values of `generate` added by the caller) */
  record: Record<string, string>;
  condition: { type: 'KeyMaterial'; status: 'True' | 'False'; reason: string; message: string };
}

/** What to do about the generated Secret: generate the never-recorded keys; on a mismatch, nothing unless the admin accepted it. */
export function decideKeys(secretName: string, check: KeyCheck, recorded: Record<string, string>, accepted: string | undefined, tsName: string): KeyDecision {
  if (!check.fingerprint) {
    return {
      generate: check.toGenerate,
      record: { ...recorded, ...check.present },
      condition: { type: 'KeyMaterial', status: 'True', reason: 'KeysIntact', message: `every key in Secret ${secretName} matches its recorded checksum` },
    };
  }
  if (accepted === check.fingerprint) {
    const lost = new Set(check.lost);
    const kept = Object.fromEntries(Object.entries(recorded).filter(([k]) => !lost.has(k)));
    return {
      generate: [...check.toGenerate, ...check.lost],
      record: { ...kept, ...check.present },
      condition: {
        type: 'KeyMaterial',
        status: 'True',
        reason: 'KeysAccepted',
        message: `accepted by ${ACCEPT_KEYS_ANNOTATION}=${accepted}: ${[...check.lost.map((k) => `${k} regenerated`), ...check.changed.map((k) => `${k} kept as changed`)].join(', ')}; restart the services to use them`,
      },
    };
  }
  const what = [...(check.lost.length ? [`lost: ${check.lost.join(', ')}`] : []), ...(check.changed.length ? [`changed: ${check.changed.join(', ')}`] : [])].join('; ');
  return {
    // Keys never recorded are still safe to add; the mismatched ones wait.
    generate: check.toGenerate,
    // newly present keys are recorded; the recorded checksums of the mismatched ones stay as they were
    record: { ...check.present, ...recorded },
    condition: {
      type: 'KeyMaterial',
      status: 'False',
      reason: check.lost.length ? 'KeysLost' : 'KeysChanged',
      message:
        `Secret ${secretName} no longer holds the recorded key material (${what}); nothing was regenerated. ` +
        `Restore the Secret from a backup with the old values, or accept new values (signs everyone out; TOTP secrets and NATS auth need the old keys): ` +
        `kubectl annotate taskservice ${tsName} ${ACCEPT_KEYS_ANNOTATION}=${check.fingerprint} --overwrite`,
    },
  };
}
