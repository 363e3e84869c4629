import { describe, expect, it } from 'vitest';
import { schemaDrift } from '../../../../tools/testenv/schema-drift.ts';
import { webhookService } from '../service.ts';
import * as schema from './schema.ts';

describe('the webhook schema', () => {
  it('describes exactly the tables its migrations make, and drizzle-kit has nothing left to generate', async () => {
    expect(await schemaDrift(webhookService, schema)).toEqual({ database: [], snapshot: [] });
  });
});
