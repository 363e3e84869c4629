import { AppError, type CreateWishlistItemBody, type HttpCall, type WishlistItem } from '@tasksvc/proto';
import type { PoolClient } from '@tasksvc/runtime';
import { ensureProfile } from '../db/profiles.ts';
import { transact, userOf, type Ctx } from '../handlers/common.ts';
import { unlockAchievements } from './unlock.ts';

type Db = Pick<PoolClient, 'query'>;
type IdCall = HttpCall<{ id: string }, unknown, unknown>;

interface ItemRow {
  id: string;
  title: string;
  price: number;
  url: string | null;
  status: WishlistItem['status'];
  created_at: Date;
  closed_at: Date | null;
}

const ITEM_COLS = 'id, title, price, url, status, created_at, closed_at';

const toItem = (r: ItemRow): WishlistItem => ({
  id: r.id,
  title: r.title,
  price: r.price,
  url: r.url,
  status: r.status,
  createdAt: r.created_at.toISOString(),
  closedAt: r.closed_at?.toISOString() ?? null,
});

const notFound = () => new AppError('WISHLIST_NOT_FOUND', 'wishlist item not found');

async function coins(db: Db, userId: string): Promise<number> {
  return (await ensureProfile(db, userId)).coins;
}

export async function listWishlist(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  const userId = userOf(call).id;
  const { rows } = await ctx.pool.query<ItemRow>(
    `SELECT ${ITEM_COLS} FROM tasks.wishlist_items WHERE user_id = $1 ORDER BY status = 'OPEN' DESC, COALESCE(closed_at, created_at) DESC, id`,
    [userId],
  );
  return { items: rows.map(toItem), coins: await coins(ctx.pool, userId) };
}

export async function createWishlistItem(ctx: Ctx, call: HttpCall<unknown, unknown, CreateWishlistItemBody>) {
  const userId = userOf(call).id;
  const b = call.body;
  const { rows } = await ctx.pool.query<ItemRow>(
    `INSERT INTO tasks.wishlist_items (user_id, title, price, url) VALUES ($1, $2, $3, $4) RETURNING ${ITEM_COLS}`,
    [userId, b.title, b.price, b.url ?? null],
  );
  return { item: toItem(rows[0]!), coins: await coins(ctx.pool, userId) };
}

/** Lock an open item of the caller's: 404 for anyone else's, 409 once it is bought or discarded. */
async function openItem(c: Db, userId: string, id: string): Promise<ItemRow> {
  const { rows } = await c.query<ItemRow>(`SELECT ${ITEM_COLS} FROM tasks.wishlist_items WHERE id = $1 AND user_id = $2 FOR UPDATE`, [id, userId]);
  const item = rows[0];
  if (!item) throw notFound();
  if (item.status !== 'OPEN') throw new AppError('CONFLICT', `the item is already ${item.status.toLowerCase()}`);
  return item;
}

/** Buying spends the price in the same transaction; the balance never goes below zero (409 when short). */
export async function buyWishlistItem(ctx: Ctx, call: IdCall) {
  const userId = userOf(call).id;
  return transact(ctx, async (c) => {
    await ensureProfile(c, userId);
    const item = await openItem(c, userId, call.params.id);
    const spent = await c.query<{ coins: number }>(
      'UPDATE tasks.profiles SET coins = coins - $2, updated_at = now() WHERE user_id = $1 AND coins >= $2 RETURNING coins',
      [userId, item.price],
    );
    if (spent.rowCount === 0) {
      const have = await coins(c, userId);
      throw new AppError('INSUFFICIENT_COINS', `this item costs ${item.price} coins; you have ${have}`);
    }
    const { rows } = await c.query<ItemRow>(
      `UPDATE tasks.wishlist_items SET status = 'BOUGHT', closed_at = now() WHERE id = $1 RETURNING ${ITEM_COLS}`,
      [item.id],
    );
    await unlockAchievements(c, userId, null);
    return { item: toItem(rows[0]!), coins: await coins(c, userId) };
  });
}

export async function discardWishlistItem(ctx: Ctx, call: IdCall) {
  const userId = userOf(call).id;
  return transact(ctx, async (c) => {
    const item = await openItem(c, userId, call.params.id);
    const { rows } = await c.query<ItemRow>(
      `UPDATE tasks.wishlist_items SET status = 'DISCARDED', closed_at = now() WHERE id = $1 RETURNING ${ITEM_COLS}`,
      [item.id],
    );
    return { item: toItem(rows[0]!), coins: await coins(c, userId) };
  });
}
