import { describe, expect, it } from 'vitest';
import { signInOrigin, signInOrigins } from './origins.ts';

describe('sign-in origins', () => {
  it('a public callback URL is the only origin, whatever the Host header says', () => {
    expect(signInOrigins('https://tasks.example.org')).toEqual(['https://tasks.example.org']);
    expect(signInOrigin('https://tasks.example.org', 'evil.example')).toBe('https://tasks.example.org');
    expect(signInOrigin('https://tasks.example.org', '127.0.0.1:3000')).toBe('https://tasks.example.org');
  });
  it('a loopback callback URL signs in on each loopback name of the same port (issue 55, bug 6)', () => {
    expect(signInOrigins('http://localhost:3000')).toEqual(['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000']);
    expect(signInOrigin('http://localhost:3000', '127.0.0.1:3000')).toBe('http://127.0.0.1:3000');
    expect(signInOrigin('http://127.0.0.1:3000', 'localhost:3000')).toBe('http://localhost:3000');
    expect(signInOrigin('http://localhost:3000', 'LOCALHOST:3000')).toBe('http://localhost:3000');
    // another port or a name that is not this machine: the configured origin
    expect(signInOrigin('http://localhost:3000', '127.0.0.1:3001')).toBe('http://localhost:3000');
    expect(signInOrigin('http://localhost:3000', 'tasks.example.org')).toBe('http://localhost:3000');
    expect(signInOrigin('http://localhost:3000', undefined)).toBe('http://localhost:3000');
  });
});
