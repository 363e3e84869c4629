import { describe, expect, it } from 'vitest';
import { heavyAtStart, loadedAtStart } from '../../../tools/testenv/start-imports.ts';

describe('the auth service at start', () => {
  // the WebAuthn library and its ASN.1/X.509 stack are loaded by the first passkey ceremony
  // (handlers/passkeys.ts): at start they were ~300 modules and ~4.5 MB of heap kept (tools/bench/footprint.ts)
  it('does not load the WebAuthn library until a passkey ceremony needs it', () => {
    const urls = loadedAtStart('services/auth/src/service.ts');
    expect(urls.some((u) => u.includes('/services/auth/src/handlers/passkeys.ts'))).toBe(true);
    expect(heavyAtStart(urls, ['@simplewebauthn/server', '@peculiar/'])).toEqual([]);
  });
});
