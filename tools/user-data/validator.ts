import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { SCHEMA_FILE } from './gen-schema.ts';

/**
 * An independent check of an export: ajv with the published docs/user-export.schema.json (not the zod
 * schema it was generated from), the formats it uses checked too.
 */
export function exportValidator(): ValidateFunction {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('date', /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/);
  ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  return ajv.compile(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as object);
}
