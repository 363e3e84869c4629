import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CASING } from '@tasksvc/runtime/db/orm.ts';
import { generateDrizzleJson } from 'drizzle-kit/api';

/**
 * Adopt drizzle-kit for a service whose migrations were written by hand (done once per service):
 * record its schema.ts as the state its last migration file leaves, so `drizzle-kit generate`
 * writes only what changes after it, numbered on from that file. The migrations themselves stay as
 * they are (deployed databases have applied them); `schema.test.ts` proves schema.ts describes
 * exactly what they make.
 *
 *   node tools/db/baseline.ts <service>
 */
const service = process.argv[2];
if (!service) throw new Error('usage: node tools/db/baseline.ts <service>');
const root = new URL(`../../services/${service}/`, import.meta.url).pathname;
const dir = join(root, 'migrations');
const meta = join(dir, 'meta');
if (existsSync(join(meta, '_journal.json'))) throw new Error(`${meta} exists already: generate migrations with drizzle-kit instead`);
const last = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort().at(-1);
const m = last && /^(\d{4})_(.+)\.sql$/.exec(last);
if (!m) throw new Error(`no NNNN_<name>.sql migration in ${dir}`);
const schema = (await import(join(root, 'src/db/schema.ts'))) as Record<string, unknown>;
const snapshot = generateDrizzleJson(schema, undefined, undefined, CASING);
mkdirSync(meta, { recursive: true });
writeFileSync(join(meta, `${m[1]}_snapshot.json`), `${JSON.stringify(snapshot, null, 2)}\n`);
const entry = { idx: Number(m[1]), version: snapshot.version, when: Date.now(), tag: last.slice(0, -'.sql'.length), breakpoints: true };
writeFileSync(join(meta, '_journal.json'), `${JSON.stringify({ version: snapshot.version, dialect: 'postgresql', entries: [entry] }, null, 2)}\n`);
console.log(`${service}: baseline ${entry.tag}; next: node_modules/.bin/drizzle-kit generate --config services/${service}/drizzle.config.ts --name <what>`);
