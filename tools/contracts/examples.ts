import { z } from 'zod';

type Def = Record<string, unknown> & { type: string };
type Any = z.ZodType & { _zod: { def: Def; bag: Record<string, unknown> } };

const UUID = '6f1c1f3e-5b7a-4c2e-9d51-0a9a3f1e2b44';

/** Strings by format, and for patterns no format names, candidates tried in turn (shapes the contracts' patterns ask for). */
const BY_FORMAT: Record<string, string> = {
  uuid: UUID,
  guid: UUID,
  email: 'someone@example.com',
  url: 'https://example.com/hook',
  date: '2026-12-01',
  datetime: '2026-12-01T08:00:00.000Z',
  time: '08:30',
  duration: 'PT1H',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  base64: 'aGVsbG8=',
  base64url: 'aGVsbG8',
};
const CANDIDATES = [
  'example',
  'Example value',
  '08:30',
  '2026-12-01',
  '2026-12-01T08:00:00.000Z',
  UUID,
  'https://example.com/hook',
  '/tasks',
  'someone@example.com',
  'Europe/Berlin',
  'abc123',
  'AbCdEfGhIjKlMnOpQrStUvWxYz0123',
  '123456789:AbCdEfGhIjKlMnOpQrStUvWxYz0123456',
  '-1001234567890',
  'FREQ=DAILY',
  '#3b82f6',
  'ts_live_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg',
  '123456',
  `ts_cal_${'A'.repeat(43)}.ics`,
  '0123456789abcdef'.repeat(4),
  'A'.repeat(87),
  'x',
];

/**
 * A full example of what a sender of `schema` sends: every optional key present, each value valid
 * for its schema (formats, bounds, enums; patterns by trying candidates). Undefined where no value
 * was found — the caller then checks the whole against the schema and says which contract needs a
 * hand-written example.
 */
export function exampleOf(schema: z.ZodType): unknown {
  const s = schema as Any;
  const def = s._zod.def;
  const fits = (v: unknown) => v !== undefined && schema.safeParse(v).success;
  switch (def.type) {
    case 'string': {
      const bag = s._zod.bag;
      const format = typeof bag.format === 'string' ? BY_FORMAT[bag.format] : undefined;
      const min = typeof bag.minimum === 'number' ? bag.minimum : 0;
      const padded = (v: string) => (v.length >= min ? v : v.padEnd(min, 'x'));
      return [format, ...CANDIDATES].map((c) => c && padded(c)).find(fits);
    }
    case 'number': {
      const bag = s._zod.bag;
      const lo = typeof bag.minimum === 'number' && Number.isFinite(bag.minimum) ? bag.minimum : typeof bag.exclusiveMinimum === 'number' ? bag.exclusiveMinimum + 1 : undefined;
      const hi = typeof bag.maximum === 'number' && Number.isFinite(bag.maximum) ? bag.maximum : undefined;
      return [lo !== undefined && lo > 1 ? lo : undefined, 1, 5, hi, 0, lo].find(fits);
    }
    case 'bigint':
      return undefined;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'undefined':
    case 'void':
      return undefined;
    case 'any':
    case 'unknown':
      return 'example';
    case 'date':
      return new Date('2026-12-01T08:00:00.000Z');
    case 'enum':
      return Object.values(def.entries as Record<string, unknown>)[0];
    case 'literal':
      return (def.values as unknown[])[0];
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional': {
      const inner = exampleOf(def.innerType as z.ZodType);
      return fits(inner) ? inner : def.type === 'nullable' ? null : undefined;
    }
    case 'array': {
      const one = exampleOf(def.element as z.ZodType);
      return [[one], [], [one, one]].find(fits);
    }
    case 'tuple':
      return (def.items as z.ZodType[]).map(exampleOf);
    case 'record': {
      const key = exampleOf(def.keyType as z.ZodType);
      return [{ [String(key)]: exampleOf(def.valueType as z.ZodType) }, {}].find(fits);
    }
    case 'union':
      for (const option of def.options as z.ZodType[]) {
        const v = exampleOf(option);
        if (fits(v)) return v;
      }
      return undefined;
    case 'intersection': {
      const l = exampleOf(def.left as z.ZodType);
      const r = exampleOf(def.right as z.ZodType);
      return typeof l === 'object' && typeof r === 'object' ? { ...l, ...r } : l;
    }
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      const full: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(shape)) {
        const v = exampleOf(field);
        if (v !== undefined) full[key] = v;
      }
      if (fits(full)) return full;
      // a refinement across fields: drop the optional ones, then each single one in turn
      const required: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(shape)) if (!field.safeParse(undefined).success) required[key] = full[key];
      if (fits(required)) {
        for (const key of Object.keys(full)) {
          const more = { ...required, [key]: full[key] };
          if (fits(more)) Object.assign(required, { [key]: full[key] });
        }
        return required;
      }
      return full;
    }
    case 'pipe': {
      const v = exampleOf(def.in as z.ZodType);
      return fits(v) ? v : undefined;
    }
    case 'lazy':
      return exampleOf((def.getter as () => z.ZodType)());
    default:
      return undefined;
  }
}
