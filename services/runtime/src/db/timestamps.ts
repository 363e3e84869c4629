import pg from 'pg';

const TIMESTAMPTZ: number = pg.types.builtins.TIMESTAMPTZ;
const pgTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date;

const digit = (s: string, i: number) => s.charCodeAt(i) - 48;
const two = (s: string, i: number) => digit(s, i) * 10 + digit(s, i + 1);
const DASH = 45;
const SPACE = 32;
const DOT = 46;
const PLUS = 43;
const COLON = 58;

/**
 * A `timestamptz` as PostgreSQL prints it with DateStyle ISO (`2026-11-27 14:53:19.123456+00`,
 * `…+05:30`), read by position: pg's own parser runs a regular expression per value, and a page of
 * tasks holds a hundred of them (3 % of a list's CPU). Anything else (years before 1000 or after
 * 9999, BC, infinity, offsets with seconds, another DateStyle) goes to pg's parser, so the result is
 * always the same Date.
 */
export function parseTimestamptz(s: string): Date {
  if (s.length >= 22 && s.charCodeAt(4) === DASH && s.charCodeAt(10) === SPACE && s.charCodeAt(0) !== 48 /* year ≥ 1000 */) {
    let i = 19;
    let ms = 0;
    if (s.charCodeAt(i) === DOT) {
      // milliseconds, truncated like pg's parser does (Date keeps no finer unit)
      for (let scale = 100, d = digit(s, ++i); d >= 0 && d <= 9; d = digit(s, ++i)) {
        if (scale >= 1) ms += d * scale;
        scale /= 10;
      }
    }
    const sign = s.charCodeAt(i);
    const rest = s.length - i;
    if ((sign === PLUS || sign === DASH) && (rest === 3 || (rest === 6 && s.charCodeAt(i + 3) === COLON))) {
      const offsetMin = (two(s, i + 1) * 60 + (rest === 6 ? two(s, i + 4) : 0)) * (sign === PLUS ? 1 : -1);
      const year = two(s, 0) * 100 + two(s, 2);
      return new Date(Date.UTC(year, two(s, 5) - 1, two(s, 8), two(s, 11), two(s, 14), two(s, 17), ms) - offsetMin * 60_000);
    }
  }
  return pgTimestamptz(s);
}

/** The type parsers of the runtime's pools: pg's, with `timestamptz` read by parseTimestamptz. */
export const poolTypes = {
  getTypeParser: ((id: number, format?: 'text' | 'binary') =>
    id === TIMESTAMPTZ && format !== 'binary' ? parseTimestamptz : pg.types.getTypeParser(id, format)) as typeof pg.types.getTypeParser,
};

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * `d.toISOString()`, built from its UTC fields: V8's own takes ~1 µs, a third of a row's mapping when
 * a page of tasks is turned into JSON. Years outside 1000–9999 (and invalid dates) take the original.
 */
export function isoString(d: Date): string {
  const year = d.getUTCFullYear();
  if (!(year >= 1000 && year <= 9999)) return d.toISOString();
  return `${year}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}T${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}.${pad3(d.getUTCMilliseconds())}Z`;
}

const ZERO = 48;

/**
 * A `timestamptz` as PostgreSQL prints it, straight to `isoString`'s form: printed in UTC (`+00`, a
 * session in that zone) the ISO text is the same characters rearranged, no Date in between (a list
 * page turned 100 texts into Dates only to print them again). Any other offset or form goes through
 * parseTimestamptz, so the result is always `isoString` of the instant.
 */
export function timestamptzIso(s: string): string {
  const n = s.length;
  if (
    n >= 22 &&
    s.charCodeAt(n - 3) === PLUS &&
    s.charCodeAt(n - 2) === ZERO &&
    s.charCodeAt(n - 1) === ZERO &&
    s.charCodeAt(4) === DASH &&
    s.charCodeAt(10) === SPACE &&
    s.charCodeAt(0) !== ZERO /* year ≥ 1000 */ &&
    (n === 22 || (s.charCodeAt(19) === DOT && n <= 29))
  ) {
    // milliseconds truncated, as parseTimestamptz keeps them
    const ms = n === 22 ? '000' : `${s.slice(20, n - 3)}00`.slice(0, 3);
    return `${s.slice(0, 10)}T${s.slice(11, 19)}.${ms}Z`;
  }
  return isoString(parseTimestamptz(s));
}
