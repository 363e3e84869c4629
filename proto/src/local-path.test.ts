import { describe, expect, it } from 'vitest';
import { sameOriginPath } from './local-path.ts';

const ORIGIN = 'http://localhost:3000';

describe('sameOriginPath', () => {
  it('keeps paths on the app, with query and fragment', () => {
    expect(sameOriginPath('/dashboard', ORIGIN)).toBe('/dashboard');
    expect(sameOriginPath('/tasks?topic=a%20b#x', ORIGIN)).toBe('/tasks?topic=a%20b#x');
    expect(sameOriginPath('http://localhost:3000/settings', ORIGIN)).toBe('/settings');
    expect(sameOriginPath('/a/../b', ORIGIN)).toBe('/b');
  });

  it.each([
    '/\\evil.example',
    '\\\\evil.example',
    '/\\/evil.example',
    '//evil.example',
    '///evil.example',
    '/%2F%2Fevil.example',
    '/%5Cevil.example',
    '/%2fevil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    'https://evil.example/',
    'http://localhost:3001/',
    'http://localhost:3000@evil.example/',
    'javascript:alert(1)',
    'data:text/html,x',
    'evil.example',
    '/..//evil.example',
    'http://localhost:3000//evil.example',
    '',
    null,
    undefined,
  ])('refuses %j', (input) => {
    expect(sameOriginPath(input, ORIGIN)).toBeNull();
  });
});
