import { defineConfig } from 'drizzle-kit';
import { CASING } from '@tasksvc/runtime/db/orm.ts';

/**
 * drizzle-kit's configuration for one service (its `drizzle.config.ts`): the tables of
 * `src/db/schema.ts`, migrations generated into the service's `migrations/` folder, numbered on from
 * its last file (`NNNN_<name>.sql`, the order the runtime's migrator applies them in) with the
 * snapshots drizzle-kit diffs against in `migrations/meta/`. Run from the repository root:
 *
 *   node_modules/.bin/drizzle-kit generate --config services/<service>/drizzle.config.ts --name <what>
 *
 * (docs/architecture.md, Data layer).
 */
export function serviceConfig(service: string) {
  return defineConfig({
    dialect: 'postgresql',
    schema: `services/${service}/src/db/schema.ts`,
    out: `services/${service}/migrations`,
    casing: CASING,
    migrations: { prefix: 'index' },
    breakpoints: true,
  });
}
