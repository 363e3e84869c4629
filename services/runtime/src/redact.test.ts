import { describe, expect, it } from 'vitest';
import { redactUrl } from './redact.ts';

describe('redactUrl', () => {
  it('hides the iCal feed token in the path', () => {
    expect(redactUrl('/api/calendar/3f9c2a7be1d04c55.ics')).toBe('/api/calendar/[redacted].ics');
    expect(redactUrl('/api/calendar/3f9c2a7be1d04c55.ics?x=1')).toBe('/api/calendar/[redacted].ics?x=1');
    // the router decodes percent-escapes: so does the redaction, before it looks (#56.6)
    expect(redactUrl('/api/%63alendar/3f9c2a7be1d04c55.ics')).toBe('/api/calendar/[redacted].ics');
    expect(redactUrl('/%61pi/c%61lendar/3f9c2a7be1d04c55.ics?x=1')).toBe('/api/calendar/[redacted].ics?x=1');
    expect(redactUrl('/api/%43ALENDAR/%33f9c2a7be1d04c55%2Eics')).toBe('/api/CALENDAR/[redacted].ics');
    expect(redactUrl('/api/tasks/%zz')).toBe('/api/tasks/%zz');
    expect(redactUrl('/API/Calendar/abc')).toBe('/API/Calendar/[redacted]');
  });

  it('hides credential-carrying query parameters, whatever their case or encoding, and keeps the rest', () => {
    expect(redactUrl('/api/auth/callback/oidc?code=abc123&state=xyz&iss=http%3A%2F%2F127.0.0.1')).toBe('/api/auth/callback/oidc?code=[redacted]&state=[redacted]&iss=http%3A%2F%2F127.0.0.1');
    expect(redactUrl('/x?TOKEN=a&api%5Fkey=b&page=2&flag')).toBe('/x?TOKEN=[redacted]&api%5Fkey=[redacted]&page=2&flag');
    expect(redactUrl('/api/tasks?status=open')).toBe('/api/tasks?status=open');
    expect(redactUrl('/api/tasks?limit=50&offset=0&q=a%20b+c')).toBe('/api/tasks?limit=50&offset=0&q=a%20b+c');
    expect(redactUrl('/x?a=1&%74oken=t&b=2')).toBe('/x?a=1&%74oken=[redacted]&b=2');
    expect(redactUrl('/x?a=1&to+ken=t&state=s')).toBe('/x?a=1&to+ken=t&state=[redacted]');
    expect(redactUrl('/x?mytoken=1&token_x=2&sig')).toBe('/x?mytoken=1&token_x=2&sig');
    expect(redactUrl('/api/calendar/abc.ics?page=1')).toBe('/api/calendar/[redacted].ics?page=1');
  });
});
