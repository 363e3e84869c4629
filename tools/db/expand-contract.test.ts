import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ALL_SERVICES } from '../system.ts';
import { fileAt, filesAt, previousRelease } from '../release/previous.ts';
import { modelOfSnapshot, violations, widens, type SchemaModel } from './expand-contract.ts';

const root = new URL('../..', import.meta.url).pathname;

describe('migrations new since the previous release are expand/contract', () => {
  const previous = previousRelease();
  it.each(ALL_SERVICES.filter((s) => s.migrations).map((s) => [s.name, s.migrations!] as const))('%s', (name, m) => {
    const dir = join('services', name, 'migrations');
    const before = filesAt(previous.commit, dir);
    const fresh = readdirSync(join(root, dir))
      .filter((f) => f.endsWith('.sql') && !before.includes(f))
      .sort();
    const snapshots = filesAt(previous.commit, `${dir}/meta`).filter((f) => f.endsWith('_snapshot.json')).sort();
    const model: SchemaModel = snapshots.length > 0 ? modelOfSnapshot(fileAt(previous.commit, `${dir}/meta/${snapshots.at(-1)}`)!) : new Map();
    const found = fresh.flatMap((file) => violations(readFileSync(join(root, dir, file), 'utf8'), { file: `${dir}/${file}`, schema: m.schema, previous: model, previousFiles: before }));
    expect(found, `beside ${previous.label}`).toEqual([]);
  });
});

describe('the check', () => {
  const previous: SchemaModel = new Map([
    [
      'tasks.tasks',
      new Map([
        ['id', { type: 'uuid', notNull: true }],
        ['title', { type: 'character varying(100)', notNull: true }],
        ['note', { type: 'text', notNull: false }],
        ['count', { type: 'integer', notNull: true }],
      ]),
    ],
    ['tasks.topics', new Map([['id', { type: 'uuid', notNull: true }]])],
  ]);
  const check = (sql: string) => violations(sql, { file: '0042_x.sql', schema: 'tasks', previous, previousFiles: ['0040_expand.sql'] });

  it('fails a drop or rename of what the previous release uses, a narrowed type, NOT NULL without a default', () => {
    expect(check('ALTER TABLE "tasks"."tasks" DROP COLUMN "note";')).toEqual([expect.stringMatching(/drops column tasks\.tasks\.note while the previous release still uses it/)]);
    expect(check('DROP TABLE "tasks"."topics" CASCADE;')).toEqual([expect.stringMatching(/drops table tasks\.topics/)]);
    expect(check('ALTER TABLE tasks RENAME COLUMN note TO notes;')).toEqual([expect.stringMatching(/renames column tasks\.tasks\.note to notes/)]);
    expect(check('ALTER TABLE "tasks"."topics" RENAME TO "projects";')).toEqual([expect.stringMatching(/renames table tasks\.topics to projects/)]);
    expect(check('ALTER TABLE "tasks"."tasks" ALTER COLUMN "title" SET DATA TYPE varchar(50);')).toEqual([expect.stringMatching(/changes the type of tasks\.tasks\.title from character varying\(100\) to character varying\(50\)/)]);
    expect(check('ALTER TABLE "tasks"."tasks" ALTER COLUMN "count" TYPE smallint;')).toHaveLength(1);
    expect(check('ALTER TABLE "tasks"."tasks" ALTER COLUMN "note" SET NOT NULL;')).toEqual([expect.stringMatching(/makes tasks\.tasks\.note NOT NULL/)]);
    expect(check('ALTER TABLE "tasks"."tasks" ADD COLUMN "owner" uuid NOT NULL;')).toEqual([expect.stringMatching(/adds tasks\.tasks\.owner NOT NULL without a default/)]);
    expect(check('ALTER TABLE "tasks"."tasks" DROP COLUMN "note", DROP COLUMN "count";--> statement-breakpoint\nDROP TABLE tasks.topics;')).toHaveLength(3);
  });

  it('passes what only adds or widens, and what the previous release does not have', () => {
    expect(
      check(`CREATE TABLE "tasks"."labels" ("id" uuid PRIMARY KEY NOT NULL, "name" text NOT NULL);
--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "due_time" text;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ADD COLUMN "reminders" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ALTER COLUMN "title" SET DATA TYPE text;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ALTER COLUMN "count" SET DATA TYPE bigint;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" ALTER COLUMN "note" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks"."tasks" DROP CONSTRAINT "tasks_title_check";--> statement-breakpoint
ALTER TABLE "tasks"."labels" DROP COLUMN "name";--> statement-breakpoint
DROP TABLE "tasks"."scratch";--> statement-breakpoint
CREATE INDEX "tasks_due" ON "tasks"."tasks" ("due_time");
DO $$ BEGIN UPDATE tasks.tasks SET note = NULL; END $$;`),
    ).toEqual([]);
    expect(widens('varchar(20)', 'character varying(40)')).toBe(true);
    expect(widens('integer', 'numeric(5,2)')).toBe(false);
  });

  it('passes the contract step of an expand an earlier release shipped, and only that', () => {
    expect(check('-- contract: 0040_expand.sql (titles moved to name)\nALTER TABLE "tasks"."tasks" DROP COLUMN "note";')).toEqual([]);
    expect(check('-- contract: 0041_not_shipped.sql\nALTER TABLE "tasks"."tasks" DROP COLUMN "note";')).toEqual([expect.stringMatching(/marked as the contract step of 0041_not_shipped\.sql, which no earlier release shipped/)]);
  });
});
