import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatAxisDate, formatDate, formatDateTime, localDate } from '../src/lib/dates.ts';

const SRC = new URL('../src/', import.meta.url).pathname;
const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : []));

describe('one date format for the whole UI (lib/dates.ts)', () => {
  it('writes a calendar date with weekday, day and month, and the year only outside this one', () => {
    const year = new Date().getUTCFullYear();
    expect(formatDate(`${year}-03-02`)).toBe(new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' }).format(new Date(`${year}-03-02T00:00:00Z`)));
    expect(formatDate(`${year + 1}-03-02`)).toContain(String(year + 1));
    expect(formatDate(null)).toBe('');
  });

  it('writes an instant as its date in the given timezone, then the time', () => {
    // 23:30 UTC is already the next day in Berlin: the date part follows the timezone.
    const iso = '2030-06-01T23:30:00Z';
    expect(localDate(iso, 'Europe/Berlin')).toBe('2030-06-02');
    expect(formatDateTime(iso, 'Europe/Berlin').startsWith(`${formatDate('2030-06-02')}, `)).toBe(true);
    expect(formatDateTime(null)).toBe('—');
  });

  it('labels chart axes with the same date, without the weekday', () => {
    expect(formatAxisDate('2030-11-25')).toBe(new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' }).format(new Date('2030-11-25T00:00:00Z')));
  });

  it('is the only place that formats dates: no screen formats one on its own', () => {
    const own = files(SRC)
      .filter((f) => !f.endsWith(join('lib', 'dates.ts')))
      .filter((f) => /toLocaleDateString|toLocaleString\(|toLocaleTimeString|Intl\.DateTimeFormat\((?!\)\.resolvedOptions)/.test(readFileSync(f, 'utf8')));
    expect(own).toEqual([]);
  });
});
