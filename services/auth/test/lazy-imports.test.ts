import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const root = new URL('../../..', import.meta.url).pathname;

/** Every module URL node loads when the auth service's module is imported, in a fresh process. */
function loadedAtStart(): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = [];
    registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
    await import(${JSON.stringify(`${root}services/auth/src/service.ts`)});
    console.log(JSON.stringify(urls));
    process.exit(0);
  `;
  const out = execFileSync(`${root}node_modules/.bin/node`, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1)!) as string[];
}

describe('the auth service at start', () => {
  // the WebAuthn library and its ASN.1/X.509 stack are loaded by the first passkey ceremony
  // (handlers/passkeys.ts): at start they were ~300 modules and ~4.5 MB of heap kept (tools/bench/footprint.ts)
  it('does not load the WebAuthn library until a passkey ceremony needs it', () => {
    const urls = loadedAtStart();
    expect(urls.some((u) => u.includes('/services/auth/src/handlers/passkeys.ts'))).toBe(true);
    expect(urls.filter((u) => /\/node_modules\/(@simplewebauthn\/server|@peculiar)\//.test(u))).toEqual([]);
  });
});
