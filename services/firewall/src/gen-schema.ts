// Writes schema/config.schema.json from the zod schema (run after changing config.ts;
// ../test/schema.test.ts fails while the published file is stale).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderJsonSchema } from './json-schema.ts';

const out = fileURLToPath(new URL('../schema/config.schema.json', import.meta.url));
writeFileSync(out, renderJsonSchema());
console.log(`wrote ${out}`);
