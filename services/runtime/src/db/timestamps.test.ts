import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isoString, parseTimestamptz, poolTypes, timestamptzIso } from './timestamps.ts';

const pgParse = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (s: string) => Date | number;
const pad = (n: number, w: number) => String(n).padStart(w, '0');

describe('parseTimestamptz', () => {
  it('reads what PostgreSQL prints as the instant it names', () => {
    expect(parseTimestamptz('2026-11-27 14:53:19.123456+00').toISOString()).toBe('2026-11-27T14:53:19.123Z');
    expect(parseTimestamptz('2026-11-27 14:53:19+00').toISOString()).toBe('2026-11-27T14:53:19.000Z');
    expect(parseTimestamptz('2026-03-01 00:00:00.5-05').toISOString()).toBe('2026-03-01T05:00:00.500Z');
    expect(parseTimestamptz('2026-11-27 14:53:19.1+05:30').toISOString()).toBe('2026-11-27T09:23:19.100Z');
    expect(parseTimestamptz('2024-02-29 23:59:59.999999-09:30').toISOString()).toBe('2024-03-01T09:29:59.999Z');
  });

  it('agrees with pg’s parser on every millisecond, offsets and fraction lengths', () => {
    let seed = 42;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 20_000; i++) {
      const frac = rand(7); // 0: none, else 1–6 digits
      const digits = pad(rand(1_000_000), 6).slice(0, frac);
      const offH = rand(15);
      const offset = `${rand(2) ? '+' : '-'}${pad(offH, 2)}${rand(3) === 0 ? `:${pad(rand(4) * 15, 2)}` : ''}`;
      const s = `${pad(1000 + rand(9000), 4)}-${pad(1 + rand(12), 2)}-${pad(1 + rand(28), 2)} ${pad(rand(24), 2)}:${pad(rand(60), 2)}:${pad(rand(60), 2)}${frac ? `.${digits}` : ''}${offset}`;
      expect(parseTimestamptz(s).getTime(), s).toBe((pgParse(s) as Date).getTime());
    }
  });

  it('hands what it does not read by position to pg’s parser', () => {
    for (const s of ['0044-03-15 12:00:00+00 BC', '0099-01-01 00:00:00+00', '12345-01-01 00:00:00+00', '1880-01-01 00:00:00+00:53:28', 'infinity', '-infinity']) {
      expect(parseTimestamptz(s), s).toEqual(pgParse(s));
    }
    expect(parseTimestamptz('0099-01-01 00:00:00+00').getUTCFullYear()).toBe(99);
  });

  it('is the timestamptz parser of the pools, text format only', () => {
    expect(poolTypes.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text')).toBe(parseTimestamptz);
    expect(poolTypes.getTypeParser(pg.types.builtins.INT4, 'text')).toBe(pg.types.getTypeParser(pg.types.builtins.INT4, 'text'));
  });
});

describe('isoString', () => {
  it('is toISOString for every instant, also outside the years it builds itself', () => {
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const span = Date.UTC(10000, 0, 1) - Date.UTC(1000, 0, 1);
    for (let i = 0; i < 20_000; i++) {
      const d = new Date(Date.UTC(1000, 0, 1) + Math.floor((rand(2 ** 30) / 2 ** 30) * span) + rand(1000));
      expect(isoString(d)).toBe(d.toISOString());
    }
    for (const t of [Date.UTC(999, 11, 31, 23, 59, 59, 999), Date.UTC(1000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), Date.UTC(-1, 5, 1), 0]) {
      expect(isoString(new Date(t))).toBe(new Date(t).toISOString());
    }
    expect(() => isoString(new Date(NaN))).toThrow(RangeError);
  });
});

describe('timestamptzIso', () => {
  it('is isoString of the instant PostgreSQL printed, for UTC text and every other form', () => {
    expect(timestamptzIso('2026-11-27 14:53:19.123456+00')).toBe('2026-11-27T14:53:19.123Z');
    expect(timestamptzIso('2026-11-27 14:53:19+00')).toBe('2026-11-27T14:53:19.000Z');
    expect(timestamptzIso('2026-11-27 14:53:19.5+00')).toBe('2026-11-27T14:53:19.500Z');
    expect(timestamptzIso('2026-11-27 14:53:19.1+05:30')).toBe('2026-11-27T09:23:19.100Z');
    let seed = 11;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 20_000; i++) {
      const frac = rand(7);
      const digits = pad(rand(1_000_000), 6).slice(0, frac);
      // half of them in UTC, the form a UTC session prints
      const offset = rand(2) ? '+00' : `${rand(2) ? '+' : '-'}${pad(rand(15), 2)}${rand(3) === 0 ? `:${pad(rand(4) * 15, 2)}` : ''}`;
      const s = `${pad(1000 + rand(9000), 4)}-${pad(1 + rand(12), 2)}-${pad(1 + rand(28), 2)} ${pad(rand(24), 2)}:${pad(rand(60), 2)}:${pad(rand(60), 2)}${frac ? `.${digits}` : ''}${offset}`;
      expect(timestamptzIso(s), s).toBe(isoString(parseTimestamptz(s)));
    }
    for (const s of ['0044-03-15 12:00:00+00 BC', '0099-01-01 00:00:00+00', '12345-01-01 00:00:00+00', '1880-01-01 00:00:00+00:53:28', '2026-11-27 14:53:19-00:00']) {
      expect(timestamptzIso(s), s).toBe((pgParse(s) as Date).toISOString());
    }
  });
});
