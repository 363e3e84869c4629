/**
 * Hostile inputs for every operation of an OpenAPI 3.1 document: wrong types, huge strings,
 * unknown fields, bad UTF-8, path traversal, SQL metacharacters, prototype pollution, broken JSON.
 * Pure: it only builds requests; the caller sends them and judges the answers.
 */

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** raw bytes to send as the body (undefined: none) */
  body?: Buffer;
  /** what this case tries, for the report */
  label: string;
  /** when set, the answer must be exactly this: 400 naming `field` */
  expect?: { status: 400; field: string };
}

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema?: JsonSchema }[];
  body?: JsonSchema;
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  $ref?: string;
  format?: string;
}

const NASTY_STRINGS: [string, string][] = [
  ['path traversal', '../../../../etc/passwd'],
  ['encoded traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['sql quote', "' OR 1=1; DROP TABLE tasks; --"],
  ['sql comment', '1; SELECT pg_sleep(5)--'],
  ['huge', 'x'.repeat(200_000)],
  ['emoji', '😀'.repeat(50)],
  ['html', '<script>alert(1)</script>'],
  ['format string', '%s%s%s%n'],
  ['negative', '-1'],
  ['big number', '99999999999999999999999'],
  ['empty', ''],
  ['whitespace', '   '],
];

const WRONG_VALUES: [string, unknown][] = [
  ['number', 12345678901234],
  ['negative number', -1],
  ['float', 1.5],
  ['string', 'not-the-right-type'],
  ['boolean', true],
  ['null', null],
  ['array', [1, 'two', null]],
  ['object', { nested: { deeper: true } }],
  ['huge string', 'y'.repeat(100_000)],
  ['sql', "'); DELETE FROM tasks; --"],
];

/** Well-formed but impossible or absurd dates: each must be refused with 400 naming the field. */
const BAD_DATES: Record<'date' | 'date-time', string[]> = {
  date: ['9999-12-31', '2023-02-30', '2023-02-29', '2023-13-01', '0000-01-01', '1969-12-31', '20230-01-01'],
  'date-time': ['2023-02-30T10:00:00Z', '2023-13-01T00:00:00Z', '2023-01-01T25:00:00Z'],
};

function dateFormatOf(schema: JsonSchema | undefined): 'date' | 'date-time' | undefined {
  if (!schema) return undefined;
  if (schema.format === 'date' || schema.format === 'date-time') return schema.format;
  return (schema.anyOf ?? schema.oneOf ?? []).map(dateFormatOf).find(Boolean);
}

export function operationsOf(doc: { paths?: Record<string, Record<string, unknown>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, raw] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const op = raw as { parameters?: Operation['params']; requestBody?: { content?: Record<string, { schema?: JsonSchema }> } };
      ops.push({
        method: method.toUpperCase(),
        path,
        params: op.parameters ?? [],
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return ops;
}

function fillPath(path: string, value: (name: string) => string): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(value(name)));
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const VALID_UUID = '00000000-0000-4000-8000-000000000000';

/** A plausible value for a schema, so that one field at a time can be made wrong. */
function sample(schema: JsonSchema | undefined, depth = 0): unknown {
  if (!schema || depth > 4) return 'x';
  const alt = schema.anyOf ?? schema.oneOf;
  if (alt?.length) return sample(alt.find((s) => s.type !== 'null') ?? alt[0], depth + 1);
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sample(v, depth + 1)]));
    case 'array':
      return [sample(schema.items, depth + 1)];
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'string':
      return schema.format === 'uuid' ? VALID_UUID : schema.format === 'date' ? '2026-01-01' : 'sample';
    default:
      return 'x';
  }
}

export function fuzzCases(doc: { paths?: Record<string, Record<string, unknown>> }, auth: Record<string, string>): FuzzRequest[] {
  const out: FuzzRequest[] = [];
  for (const op of operationsOf(doc)) {
    const headers = { ...auth, 'content-type': 'application/json' };
    const validPath = fillPath(op.path, () => VALID_UUID);
    // Path parameters: every nasty string in every parameter.
    for (const [label, value] of NASTY_STRINGS) {
      if (!op.path.includes('{')) break;
      if (value.length > 10_000) continue; // a URL that long is refused by any proxy; keep the cases meaningful
      out.push({ method: op.method, path: fillPath(op.path, () => value), headers, label: `path param: ${label}` });
    }
    // Query: declared parameters with wrong values, plus an unknown one.
    for (const p of op.params.filter((x) => x.in === 'query')) {
      for (const [label, value] of NASTY_STRINGS.filter(([, v]) => v.length < 10_000)) {
        out.push({ method: op.method, path: `${validPath}?${encodeURIComponent(p.name)}=${encodeURIComponent(value)}`, headers, label: `query ${p.name}: ${label}` });
      }
      const format = dateFormatOf(p.schema);
      for (const value of format ? BAD_DATES[format] : []) {
        out.push({ method: op.method, path: `${validPath}?${encodeURIComponent(p.name)}=${value}`, headers, label: `query ${p.name}: bad date ${value}`, expect: { status: 400, field: `query.${p.name}` } });
      }
    }
    out.push({ method: op.method, path: `${validPath}?__proto__=1&constructor=x&unknownParam=1`, headers, label: 'unknown query parameters' });
    if (op.method === 'GET' || op.method === 'DELETE') continue;
    // Bodies: whole-body shapes, then each field made wrong in turn.
    const base = sample(op.body);
    const bodies: [string, Buffer][] = [
      ['empty object', json({})],
      ['array', json([])],
      ['null', json(null)],
      ['string', json('hello')],
      ['number', json(42)],
      ['unknown field', json({ ...(base as object), unexpectedField: 'x' })],
      ['prototype pollution', Buffer.from(`{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}`)],
      ['broken JSON', Buffer.from('{"title": "unterminated')],
      ['bad UTF-8', Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xc3, 0x28, 0xff, 0xfe]), Buffer.from('"}')])],
      ['deep nesting', Buffer.from(`${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}`)],
      ['NUL character', json({ ...(base as object), title: 'a\u0000b' })],
    ];
    for (const [label, body] of bodies) out.push({ method: op.method, path: validPath, headers, body, label: `body: ${label}` });
    // a lone UTF-16 surrogate (JSON.stringify escapes it) in a title: a 400 naming the field, not a database error
    if (base && typeof base === 'object' && 'title' in base) {
      out.push({ method: op.method, path: validPath, headers, body: json({ ...base, title: 'a\ud800b' }), label: 'body.title: lone surrogate', expect: { status: 400, field: 'body.title' } });
    }
    if (base && typeof base === 'object' && !Array.isArray(base)) {
      for (const field of Object.keys(base)) {
        for (const [label, value] of WRONG_VALUES) {
          out.push({ method: op.method, path: validPath, headers, body: json({ ...base, [field]: value }), label: `body.${field}: ${label}` });
        }
        const format = dateFormatOf(op.body?.properties?.[field]);
        for (const value of format ? BAD_DATES[format] : []) {
          out.push({ method: op.method, path: validPath, headers, body: json({ ...base, [field]: value }), label: `body.${field}: bad date ${value}`, expect: { status: 400, field: `body.${field}` } });
        }
      }
    }
    out.push({ method: op.method, path: validPath, headers: { ...auth, 'content-type': 'text/plain' }, body: Buffer.from('plain text'), label: 'wrong content type' });
  }
  return out;
}
