import { eq, sql } from 'drizzle-orm';
import { alias, bigint, date, integer, pgSchema, smallint, timestamp, uuid } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quietLogger, testSystemConfig } from '../../../../tools/testenv/index.ts';
import { jsonStatement, jsonView, orm, selectList, statement } from './orm.ts';
import { createPool, inTransaction, type Pool } from './pool.ts';

const s = pgSchema('orm_test');
const items = s.table('items', {
  id: uuid().primaryKey().defaultRandom(),
  dueDate: date({ mode: 'string' }),
  sortOrder: integer().notNull().default(0),
  createdAt: timestamp({ withTimezone: true }).notNull().defaultNow(),
  big: bigint({ mode: 'number' }),
  days: smallint().array(),
});

describe('the data layer over the pool', () => {
  let pool: Pool;
  beforeAll(async () => {
    pool = createPool((await testSystemConfig()).DATABASE_URL, quietLogger(), { max: 1 });
    await pool.query(`CREATE SCHEMA orm_test; CREATE TABLE orm_test.items (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), due_date date, sort_order int NOT NULL DEFAULT 0, created_at timestamptz NOT NULL DEFAULT now(), big bigint, days smallint[])`);
  });
  afterAll(async () => {
    await pool.end();
  });

  it('maps camelCase keys to snake_case columns, and keeps a date a calendar date', async () => {
    const [row] = await orm(pool).insert(items).values({ dueDate: '2026-03-29', sortOrder: 7 }).returning();
    expect(row).toMatchObject({ dueDate: '2026-03-29', sortOrder: 7 });
    expect(row!.createdAt).toBeInstanceOf(Date);
    expect((await pool.query('SELECT due_date::text AS d, sort_order FROM orm_test.items WHERE id = $1', [row!.id])).rows).toEqual([{ d: '2026-03-29', sort_order: 7 }]);
    expect(jsonView(row!).createdAt).toBe(row!.createdAt.toISOString());
  });

  it("runs on a transaction's own client: what it wrote is gone after a rollback", async () => {
    const id = crypto.randomUUID();
    await expect(
      inTransaction(pool, async (c) => {
        await orm(c).insert(items).values({ id });
        expect(await orm(c).select().from(items).where(eq(items.id, id))).toHaveLength(1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await orm(pool).select().from(items).where(eq(items.id, id))).toEqual([]);
  });

  it("prepares the builder's statements and a statement template once per connection, like any parameterised statement", async () => {
    const find = (id: string) => orm(pool).select({ id: items.id }).from(items).where(eq(items.id, id));
    const t = alias(items, 't');
    const fields = { id: t.id, dueDate: t.dueDate, createdAt: t.createdAt, late: sql<boolean>`${t.dueDate} < ${sql.placeholder('today')}::date` };
    const page = statement(sql`SELECT ${selectList(fields)} FROM ${items} AS t WHERE ${t.sortOrder} = ${sql.placeholder('order')}`, fields);
    const [row] = await orm(pool).insert(items).values({ dueDate: '2026-01-31', sortOrder: 42 }).returning();
    for (let i = 0; i < 3; i++) {
      expect(await find(row!.id)).toEqual([{ id: row!.id }]);
      const { rows } = await page.run(pool, { today: '2026-02-01', order: 42 });
      expect(rows).toEqual([{ id: row!.id, dueDate: '2026-01-31', createdAt: row!.createdAt, late: true }]);
    }
    const prepared = (await pool.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.map((r) => r.statement);
    expect(prepared.filter((p) => p === page.text)).toHaveLength(1);
    expect(prepared.filter((p) => /^select "id" from "orm_test"\."items" where "orm_test"\."items"\."id" = \$1$/.test(p))).toHaveLength(1);
  });

  it('gives a jsonStatement its rows as the JSON view: instants as ISO strings in any session zone, dates as text', async () => {
    const t = alias(items, 't');
    const fields = { id: t.id, dueDate: t.dueDate, createdAt: t.createdAt, sortOrder: t.sortOrder };
    const query = sql`SELECT ${selectList(fields)} FROM ${items} AS t WHERE ${t.id} = ${sql.placeholder('id')}`;
    const asJson = jsonStatement(query, fields);
    const asRow = statement(query, fields);
    const [row] = await orm(pool).insert(items).values({ dueDate: '2026-02-28', sortOrder: 3, createdAt: new Date('2026-03-29T01:30:00.123Z') }).returning();
    const client = await pool.connect();
    try {
      // UTC: rearranged text; Kolkata (+05:30) and Kathmandu (+05:45): read through a Date
      for (const zone of ['UTC', 'Asia/Kolkata', 'Asia/Kathmandu', 'America/St_Johns']) {
        await client.query(`SET TimeZone = '${zone}'`);
        const { rows } = await asJson.run(client, { id: row!.id });
        expect(rows, zone).toEqual([{ id: row!.id, dueDate: '2026-02-28', createdAt: '2026-03-29T01:30:00.123Z', sortOrder: 3 }]);
        expect((await asRow.run(client, { id: row!.id })).rows, zone).toEqual([{ ...rows[0], createdAt: row!.createdAt }]);
      }
    } finally {
      await client.query('RESET TimeZone');
      client.release();
    }
  });

  it('maps what pg leaves as text (a bigint, an expression with mapWith) and passes what pg parsed itself', async () => {
    const t = alias(items, 't');
    const fields = { big: t.big, days: t.days, sortOrder: t.sortOrder, count: sql<number>`count(*) OVER ()`.mapWith(Number), createdAt: t.createdAt };
    const [row] = await orm(pool).insert(items).values({ sortOrder: 5, big: 2 ** 40, days: [0, 6] }).returning();
    const { rows } = await statement(sql`SELECT ${selectList(fields)} FROM ${items} AS t WHERE ${t.id} = ${sql.placeholder('id')}`, fields).run(pool, { id: row!.id });
    expect(rows).toEqual([{ big: 2 ** 40, days: [0, 6], sortOrder: 5, count: 1, createdAt: row!.createdAt }]);
  });
});
