import { createHash } from 'node:crypto';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tolerant } from '@tasksvc/proto';
import { z } from 'zod';
import { allContracts, type Contract } from './catalog.ts';
import { exampleOf } from './examples.ts';

/**
 * The contracts of a released version, kept so later releases are checked against it
 * (compat.test.ts): for each contract and part (request, reply, event) an example of what that
 * release's sender sends, and the JSON Schema of how that release's receiver reads it (`tolerant`).
 * Schemas are stored once by content (`schemas`), as many contracts share one.
 */
export interface ReleaseFixture {
  version: string;
  schemas: Record<string, object>;
  contracts: Record<string, Partial<Record<Part, { example: unknown; receive: string }>>>;
}

export type Part = 'request' | 'reply' | 'event';

export const FIXTURES_DIR = new URL('../../proto/contracts/', import.meta.url).pathname;

/** The parts of a contract with their schemas as this release declares them. */
export function partsOf(c: Contract): [Part, z.ZodType][] {
  return c.kind === 'rpc' ? [['request', c.request], ['reply', c.reply]] : [['event', c.schema]];
}

/** What this release's sender of `schema` sends: a full example, as it travels (JSON). */
export function wireExample(subject: string, part: Part, schema: z.ZodType): unknown {
  const r = schema.safeParse(exampleOf(schema));
  if (!r.success) throw new Error(`no example for the ${part} of ${subject} (tools/contracts/examples.ts): ${r.error.message}`);
  return JSON.parse(JSON.stringify(r.data ?? null));
}

/** How this release's receiver reads `schema`, as JSON Schema. */
export function receiveSchema(schema: z.ZodType): object {
  return z.toJSONSchema(tolerant(schema), { io: 'input', unrepresentable: 'any', reused: 'ref' });
}

/** This release's contracts as a fixture. */
export function snapshot(version: string, contracts: Contract[] = allContracts()): ReleaseFixture {
  const fixture: ReleaseFixture = { version, schemas: {}, contracts: {} };
  for (const c of contracts) {
    const entry: ReleaseFixture['contracts'][string] = {};
    for (const [part, schema] of partsOf(c)) {
      const json = receiveSchema(schema);
      const key = createHash('sha256').update(JSON.stringify(json)).digest('hex').slice(0, 12);
      fixture.schemas[key] = json;
      entry[part] = { example: wireExample(c.subject, part, schema), receive: key };
    }
    fixture.contracts[c.subject] = entry;
  }
  return fixture;
}

/** One line per schema and per contract: a later release's diff of it reads contract by contract. */
export function formatFixture(f: ReleaseFixture): string {
  const block = (o: Record<string, unknown>) =>
    `{\n${Object.entries(o)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}`)
      .join(',\n')}\n  }`;
  return `{\n  "version": ${JSON.stringify(f.version)},\n  "schemas": ${block(f.schemas)},\n  "contracts": ${block(f.contracts)}\n}\n`;
}

/** The kept fixtures, oldest version first. */
export function releasedFixtures(): ReleaseFixture[] {
  return readdirSync(FIXTURES_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(FIXTURES_DIR, f), 'utf8')) as ReleaseFixture)
    .sort((a, b) => a.version.localeCompare(b.version, undefined, { numeric: true }));
}

const ajv = new Ajv2020({ strict: false, logger: false, allErrors: true });

export function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}${e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : ''}`).join('; ');
}

/**
 * Can this release and the one `fixture` kept run side by side on contract `c`? What that release
 * sends must read here, and what this one sends must read there — except that an exact HTTP input
 * refuses a field it does not know with a 400 naming it (docs/architecture.md), the one refusal
 * allowed. The problems found, one line each (none: compatible).
 */
export function problemsBeside(fixture: ReleaseFixture, c: Contract): string[] {
  const kept = fixture.contracts[c.subject];
  if (!kept) return [];
  const problems: string[] = [];
  for (const [part, schema] of partsOf(c)) {
    const old = kept[part];
    if (!old) continue;
    const r = tolerant(schema).safeParse(old.example);
    if (!r.success)
      problems.push(
        `the ${part} release ${fixture.version} sends does not read here: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')} (a key added to a contract is nullable, a list or has a .default(): proto/src/contracts.ts)`,
      );
    const read = oldReader(fixture, old.receive);
    if (!read(wireExample(c.subject, part, schema))) {
      const refused = (read.errors ?? []).filter((e) => !(part === 'request' && e.keyword === 'additionalProperties'));
      if (refused.length > 0) problems.push(`release ${fixture.version} cannot read the ${part} this release sends: ${describeErrors(refused)}`);
    }
  }
  return problems;
}

const readers = new WeakMap<ReleaseFixture, Map<string, ValidateFunction>>();
function oldReader(fixture: ReleaseFixture, key: string): ValidateFunction {
  let byKey = readers.get(fixture);
  if (!byKey) readers.set(fixture, (byKey = new Map()));
  let v = byKey.get(key);
  if (!v) byKey.set(key, (v = ajv.compile(fixture.schemas[key]!)));
  return v;
}
