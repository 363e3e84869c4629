import { z } from 'zod';

/**
 * Two releases run side by side during every rolling upgrade, so every contract is read in two ways:
 *
 * - **strictly by its sender**: a publisher, a caller and a replying service check what they send
 *   against the schema as declared (`.strict()` objects refuse unknown keys);
 * - **tolerantly by its receiver** (`tolerant`, derived from the same schema, so each contract says
 *   it in one place): keys the receiver does not know are ignored, and a key it knows but the sender
 *   left out (an older sender) reads as its default — the declared `.default()`, else `null` for a
 *   nullable key and `[]` for a list.
 *
 * So a new key in a contract is nullable, a list, or has a `.default()`; a key that is none of these
 * is required from every sender of every release that may run beside this one
 * (`tools/contracts/compat.test.ts` holds the examples of the released versions to that).
 *
 * HTTP inputs (a route's params, query and body) are the exception, marked `exact`: the public API
 * refuses a field it does not know, naming it (400), on whichever release answers — a field only
 * the other release knows is a clear error, never silently dropped.
 */

const exactSchemas = new WeakSet<z.ZodType>();

/** Mark a schema as read exactly as declared, by every receiver too (HTTP inputs: see above). */
export function exact<T extends z.ZodType>(schema: T): T {
  exactSchemas.add(schema);
  return schema;
}

const derived = new WeakMap<z.ZodType, z.ZodType>();

/**
 * The receiving side's reading of a contract (see above): unknown keys stripped at every level,
 * missing nullable keys `null`, missing lists `[]`, declared defaults kept. Refinements and transforms
 * are kept as declared. Memoised per schema.
 */
export function tolerant<T>(schema: z.ZodType<T>): z.ZodType<T> {
  return relax(schema) as z.ZodType<T>;
}

type Any = z.ZodType & { _zod: { def: Record<string, unknown> & { type: string } } };

function relax(schema: z.ZodType): z.ZodType {
  if (exactSchemas.has(schema)) return schema;
  const known = derived.get(schema);
  if (known) return known;
  const s = schema as Any;
  const def = s._zod.def;
  let out: z.ZodType;
  switch (def.type) {
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      const relaxed: Record<string, z.ZodType> = {};
      for (const [key, field] of Object.entries(shape)) relaxed[key] = withDefault(relax(field));
      // a strict object's catchall is `never`; a loose one (`.loose()`, unknown) keeps passing them on
      const catchall = def.catchall && (def.catchall as Any)._zod.def.type !== 'never' ? def.catchall : undefined;
      out = s.clone({ ...def, shape: relaxed, catchall } as never);
      break;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      out = s.clone({ ...def, innerType: relax(def.innerType as z.ZodType) } as never);
      break;
    case 'array':
      out = s.clone({ ...def, element: relax(def.element as z.ZodType) } as never);
      break;
    case 'union':
      out = s.clone({ ...def, options: (def.options as z.ZodType[]).map(relax) } as never);
      break;
    case 'record':
      out = s.clone({ ...def, valueType: relax(def.valueType as z.ZodType) } as never);
      break;
    default:
      // scalars, enums, literals; pipes and transforms (their input side is the sender's business) stay as declared
      out = schema;
  }
  derived.set(schema, out);
  return out;
}

/** A key an older sender may have left out: its declared default, else null or an empty list. */
function withDefault(field: z.ZodType): z.ZodType {
  const t = (field as Any)._zod.def.type;
  if (t === 'default' || t === 'prefault' || t === 'optional') return field;
  if (field.safeParse(null).success) return field.default(null as never);
  if (t === 'array') return field.default([] as never);
  return field;
}

/**
 * The value each key of an object schema takes when a sender leaves it out, as `tolerant` reads it:
 * declared default, null, an empty list; keys without one are absent from the result.
 */
export function defaultsOf(schema: z.ZodObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries((relax(schema) as z.ZodObject).shape)) {
    const r = (field as z.ZodType).safeParse(undefined);
    if (r.success && r.data !== undefined) out[key] = r.data;
  }
  return out;
}

/** The `exact` marks, for tools that walk contracts (the compatibility check). */
export function isExact(schema: z.ZodType): boolean {
  return exactSchemas.has(schema);
}
