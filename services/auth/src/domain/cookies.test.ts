import { describe, expect, it } from 'vitest';
import { sessionTokenFromCookie } from './cookies.ts';

describe('sessionTokenFromCookie', () => {
  it('over https accepts only the __Secure- name', () => {
    expect(sessionTokenFromCookie('authjs.session-token=planted', true)).toBeNull();
    expect(sessionTokenFromCookie('authjs.session-token=planted; __Secure-authjs.session-token=real', true)).toBe('real');
  });
  it('over http accepts only the plain name', () => {
    expect(sessionTokenFromCookie('authjs.session-token=t', false)).toBe('t');
    expect(sessionTokenFromCookie('__Secure-authjs.session-token=t', false)).toBeNull();
  });
});
