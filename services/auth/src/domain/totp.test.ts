import { generate } from 'otplib';
import { describe, expect, it } from 'vitest';
import { backupCodeHash, checkTotp, newBackupCodes, newTotpSecret, normaliseBackupCode, totpUri } from './totp.ts';

const T = 1_700_000_010; // inside a 30-s step, 10 s after its start

describe('checkTotp', () => {
  const secret = newTotpSecret();

  it('accepts the current step and ±1 step, refuses ±2 steps', async () => {
    expect(await checkTotp(secret, await generate({ secret, epoch: T }), null, T)).toBe(Math.floor(T / 30));
    expect(await checkTotp(secret, await generate({ secret, epoch: T - 30 }), null, T)).toBe(Math.floor(T / 30) - 1);
    expect(await checkTotp(secret, await generate({ secret, epoch: T + 30 }), null, T)).toBe(Math.floor(T / 30) + 1);
    expect(await checkTotp(secret, await generate({ secret, epoch: T - 60 }), null, T)).toBeNull();
    expect(await checkTotp(secret, await generate({ secret, epoch: T + 60 }), null, T)).toBeNull();
  });

  it('refuses the step already used and any older one (replay)', async () => {
    const step = await checkTotp(secret, await generate({ secret, epoch: T }), null, T);
    expect(await checkTotp(secret, await generate({ secret, epoch: T }), step, T)).toBeNull();
    expect(await checkTotp(secret, await generate({ secret, epoch: T - 30 }), step, T)).toBeNull();
    expect(await checkTotp(secret, await generate({ secret, epoch: T + 30 }), step, T)).toBe(step! + 1);
  });

  it('refuses malformed codes and other secrets', async () => {
    expect(await checkTotp(secret, '12345', null, T)).toBeNull();
    expect(await checkTotp(secret, 'abcdef', null, T)).toBeNull();
    const other = newTotpSecret();
    const code = await generate({ secret: other, epoch: T });
    if (code !== (await generate({ secret, epoch: T }))) expect(await checkTotp(secret, code, null, T)).toBeNull();
  });

  it('matches the RFC 6238 SHA-1 vector via otplib', async () => {
    // secret "12345678901234567890" in base32
    expect(await generate({ secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', epoch: 59, digits: 8 })).toBe('94287082');
  });

  it('builds an otpauth URI with issuer and account', () => {
    const uri = totpUri('JBSWY3DPEHPK3PXP', 'a@example.test', 'Task Service');
    expect(uri).toMatch(/^otpauth:\/\/totp\//);
    expect(uri).toContain('secret=JBSWY3DPEHPK3PXP');
    expect(uri).toContain('issuer=Task%20Service');
  });
});

describe('backup codes', () => {
  it('ten distinct codes of ten characters from a 32-character alphabet', () => {
    const codes = newBackupCodes();
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) expect(c).toMatch(/^[A-HJ-NP-Z2-9]{5}-[A-HJ-NP-Z2-9]{5}$/);
  });

  it('normalises case, spaces and dashes; rejects other shapes', () => {
    const [code] = newBackupCodes();
    expect(normaliseBackupCode(code!.toLowerCase())).toBe(code!.replace('-', ''));
    expect(backupCodeHash(` ${code!.replace('-', ' ')} `)).toBe(backupCodeHash(code!));
    expect(normaliseBackupCode('ABCDE-FGHI')).toBeNull();
    expect(normaliseBackupCode('ABCDE-FGHI0')).toBeNull();
    expect(backupCodeHash('123456')).toBeNull();
  });
});
