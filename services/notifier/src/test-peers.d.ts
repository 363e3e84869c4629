// Types for the test-only http_ece peer (no published types).
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto';
  export function decrypt(buffer: Buffer, params: { version: 'aes128gcm' | 'aesgcm'; privateKey: ECDH; authSecret: Buffer | string }): Buffer;
}
