// The published JSON Schema is generated from the zod schema and must be up to date.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { renderJsonSchema } from '../src/json-schema.ts';

const file = new URL('../schema/config.schema.json', import.meta.url);

describe('schema/config.schema.json', () => {
  it('matches the zod schema (regenerate with: node services/firewall/src/gen-schema.ts)', () => {
    expect(readFileSync(file, 'utf8')).toBe(renderJsonSchema());
  });

  it('agrees with the zod schema on closed objects, required keys, bounds and the CIDR pattern', () => {
    const ajv = new Ajv2020({ strict: false });
    const validate = ajv.compile(JSON.parse(readFileSync(file, 'utf8')));
    const base = { socket_path: '/s', data_dir: '/d', log_dir: '/l' };
    expect(validate(base)).toBe(true);
    expect(validate({ data_dir: '/d', log_dir: '/l' })).toBe(false);
    expect(validate({ ...base, firewall: { nope: 1 } })).toBe(false);
    expect(validate({ ...base, acceptance: { duration: 9 } })).toBe(false);
    expect(validate({ ...base, acceptance: { duration: 3600 } })).toBe(true);
    expect(validate({ ...base, firewall: { connection_limit_max: 100001 } })).toBe(false);
    expect(validate({ ...base, container: { custom_networks: ['10.0.0.0/8', 'fd00::/8'] } })).toBe(true);
    expect(validate({ ...base, container: { custom_networks: ['10.0.0.0'] } })).toBe(false);
    const schema = JSON.parse(readFileSync(file, 'utf8'));
    expect(schema.properties.firewall.properties.syn_flood_limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 10000, default: 100 });
  });
});
