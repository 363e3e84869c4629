import { orm, type Queryable } from '@tasksvc/runtime';
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import { wishlistItems } from './schema.ts';

/** An item as the API shows it (everything but its owner). */
const ITEM = {
  id: wishlistItems.id,
  title: wishlistItems.title,
  price: wishlistItems.price,
  url: wishlistItems.url,
  status: wishlistItems.status,
  createdAt: wishlistItems.createdAt,
  closedAt: wishlistItems.closedAt,
};
export type ItemRow = Omit<typeof wishlistItems.$inferSelect, 'userId' | 'imported'>;

/** Open items first, then the rest, newest change first. */
export async function listItems(q: Queryable, userId: string): Promise<ItemRow[]> {
  return orm(q)
    .select(ITEM)
    .from(wishlistItems)
    .where(eq(wishlistItems.userId, userId))
    .orderBy(desc(sql`${wishlistItems.status} = 'OPEN'`), desc(sql`COALESCE(${wishlistItems.closedAt}, ${wishlistItems.createdAt})`), asc(wishlistItems.id));
}

export async function insertItem(q: Queryable, userId: string, item: { title: string; price: number; url: string | null }): Promise<ItemRow> {
  const [row] = await orm(q)
    .insert(wishlistItems)
    .values({ ...item, userId })
    .returning(ITEM);
  return row!;
}

/** The caller's item, locked for their transaction (null: not theirs, or none). */
export async function lockItem(q: Queryable, userId: string, id: string): Promise<ItemRow | null> {
  const [row] = await orm(q)
    .select(ITEM)
    .from(wishlistItems)
    .where(and(eq(wishlistItems.id, id), eq(wishlistItems.userId, userId)))
    .for('update');
  return row ?? null;
}

/** Close an item: bought or discarded, now. */
export async function closeItem(q: Queryable, id: string, status: 'BOUGHT' | 'DISCARDED'): Promise<ItemRow> {
  const [row] = await orm(q)
    .update(wishlistItems)
    .set({ status, closedAt: sql`now()` })
    .where(eq(wishlistItems.id, id))
    .returning(ITEM);
  return row!;
}
