import { describe, expect, it } from 'vitest';
import { normalisePagePath, plainApiPath } from './page-gates.ts';

describe('plainApiPath (the page gate passes these without normalising)', () => {
  it.each(['/api/tasks', '/api/tasks/', '/api/tasks/0b4c3f5e-7a52-4c0e-9b1a-2f1d3c4e5a6b', '/api/user/export', '/api/a.b/c..d', "/api/x:y@z!$&'()*+,;=~_-"])('passes %s, which normalises under /api/', (raw) => {
    expect(plainApiPath(raw)).toBe(true);
    expect(normalisePagePath(raw).startsWith('/api/')).toBe(true);
  });

  it.each([
    '/api/../admin',
    '/api/./../admin',
    '/api/x/..',
    '/api/.%2e/admin',
    '/api/%2e%2e/admin',
    '/api/%2E%2E/admin',
    '/api\\..\\admin',
    '/api/\\..\\admin',
    '/api//../admin',
    '/api/x/\t.\t./\t.\t./admin',
    '/api/x/\n../../admin',
    '/api/x/ ../../admin',
    '//api/../admin',
    '/API/../admin',
    '/api',
    '/api/',
    '/admin',
    '/',
  ])('leaves %j to the normalising gate', (raw) => {
    expect(plainApiPath(raw)).toBe(false);
  });

  it('fails a long path in one pass (no backtracking blow-up)', () => {
    expect(plainApiPath(`/api/${'a'.repeat(50_000)}%`)).toBe(false);
    expect(plainApiPath(`/api/${'a/'.repeat(25_000)}%`)).toBe(false);
  });

  it('is right about every path it passes, for paths built from the dangerous pieces', () => {
    const pieces = ['/', '.', '..', '%2e', '\\', '\t', 'api', 'admin', 'x', '%2f', ':', '@'];
    let checked = 0;
    const walk = (path: string, depth: number) => {
      if (plainApiPath(path)) {
        checked++;
        expect(normalisePagePath(path).startsWith('/api/'), path).toBe(true);
      }
      if (depth === 0) return;
      for (const p of pieces) walk(path + p, depth - 1);
    };
    walk('/api/', 4);
    expect(checked).toBeGreaterThan(100);
  });
});
