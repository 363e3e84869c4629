import { describe, expect, it } from 'vitest';
import { schemaDrift } from '../../../../tools/testenv/schema-drift.ts';
import { gatewayService } from '../service.ts';
import * as schema from './schema.ts';

describe('the gateway schema', () => {
  it('describes exactly the tables its migrations make, and drizzle-kit has nothing left to generate', async () => {
    expect(await schemaDrift(gatewayService, schema)).toEqual({ database: [], snapshot: [] });
  });
});
