// Writes docs/user-export.schema.json from the zod schema in proto/src/user-data.ts (run after
// changing the export format; proto/src/user-data.test.ts fails while the published file is stale).
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { userExportJsonSchema } from '@tasksvc/proto/user-data.ts';

export const SCHEMA_FILE = fileURLToPath(new URL('../../docs/user-export.schema.json', import.meta.url));
export const renderUserExportSchema = () => `${JSON.stringify(userExportJsonSchema(), null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(SCHEMA_FILE, renderUserExportSchema());
  console.log(`wrote ${SCHEMA_FILE}`);
}
