import { randomInt } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';
import { sha256Hex } from '@tasksvc/runtime';

/** ±1 step of 30 s, the reference's drift allowance. */
export const TOTP_TOLERANCE_SECONDS = 30;
export const BACKUP_CODE_COUNT = 10;
const BACKUP_CODE_LENGTH = 10;
/** 32 characters without the worst look-alikes (no 0/O, 1/I). */
const BACKUP_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

export function newTotpSecret(): string {
  return generateSecret();
}

export function totpUri(secret: string, account: string, issuer: string): string {
  return generateURI({ issuer, label: account, secret });
}

export function isTotpShaped(code: string): boolean {
  return /^\d{6}$/.test(code);
}

/**
 * Check a 6-digit code. `lastTimeStep` is the step of the last accepted code: that step and older are
 * refused (replay). Returns the accepted step, or null. `epoch` (seconds) is for tests with a fixed clock.
 */
export async function checkTotp(secret: string, code: string, lastTimeStep: number | null, epoch?: number): Promise<number | null> {
  if (!isTotpShaped(code)) return null;
  const r = await verify({
    secret,
    token: code,
    epochTolerance: TOTP_TOLERANCE_SECONDS,
    ...(lastTimeStep !== null ? { afterTimeStep: lastTimeStep } : {}),
    ...(epoch !== undefined ? { epoch } : {}),
  });
  return r.valid && 'timeStep' in r ? r.timeStep : null;
}

/** Ten one-time codes, `XXXXX-XXXXX` for reading; stored as SHA-256 of the normalised form. */
export function newBackupCodes(): string[] {
  return Array.from({ length: BACKUP_CODE_COUNT }, () => {
    let s = '';
    for (let i = 0; i < BACKUP_CODE_LENGTH; i++) s += BACKUP_ALPHABET[randomInt(BACKUP_ALPHABET.length)];
    return `${s.slice(0, 5)}-${s.slice(5)}`;
  });
}

/** Users type codes with or without the dash, in any case. Null when it cannot be a backup code. */
export function normaliseBackupCode(input: string): string | null {
  const s = input.replace(/[\s-]/g, '').toUpperCase();
  if (s.length !== BACKUP_CODE_LENGTH) return null;
  for (const ch of s) if (!BACKUP_ALPHABET.includes(ch)) return null;
  return s;
}

export function backupCodeHash(code: string): string | null {
  const n = normaliseBackupCode(code);
  return n ? sha256Hex(n) : null;
}
