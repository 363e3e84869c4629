import { AppError, type CreateWishlistItemBody, type HttpCall, type WishlistItem } from '@tasksvc/proto';
import { jsonView, type Queryable } from '@tasksvc/runtime';
import { ensureProfile, spendCoins } from '../db/profiles.ts';
import { closeItem, insertItem, listItems, lockItem, type ItemRow } from '../db/wishlist.ts';
import { transact, userOf, type Ctx } from '../handlers/common.ts';
import { unlockAchievements } from './unlock.ts';

type IdCall = HttpCall<{ id: string }, unknown, unknown>;

const toItem = (r: ItemRow): WishlistItem => jsonView(r);

const notFound = () => new AppError('WISHLIST_NOT_FOUND', 'wishlist item not found');

async function coins(db: Queryable, userId: string): Promise<number> {
  return (await ensureProfile(db, userId)).coins;
}

export async function listWishlist(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  const userId = userOf(call).id;
  return { items: (await listItems(ctx.pool, userId)).map(toItem), coins: await coins(ctx.pool, userId) };
}

export async function createWishlistItem(ctx: Ctx, call: HttpCall<unknown, unknown, CreateWishlistItemBody>) {
  const userId = userOf(call).id;
  const b = call.body;
  const item = await insertItem(ctx.pool, userId, { title: b.title, price: b.price, url: b.url ?? null });
  return { item: toItem(item), coins: await coins(ctx.pool, userId) };
}

/** Lock an open item of the caller's: 404 for anyone else's, 409 once it is bought or discarded. */
async function openItem(c: Queryable, userId: string, id: string): Promise<ItemRow> {
  const item = await lockItem(c, userId, id);
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
    if (!(await spendCoins(c, userId, item.price))) {
      const have = await coins(c, userId);
      throw new AppError('INSUFFICIENT_COINS', `this item costs ${item.price} coins; you have ${have}`);
    }
    const bought = await closeItem(c, item.id, 'BOUGHT');
    await unlockAchievements(c, userId, null);
    return { item: toItem(bought), coins: await coins(c, userId) };
  });
}

export async function discardWishlistItem(ctx: Ctx, call: IdCall) {
  const userId = userOf(call).id;
  return transact(ctx, async (c) => {
    const item = await openItem(c, userId, call.params.id);
    return { item: toItem(await closeItem(c, item.id, 'DISCARDED')), coins: await coins(c, userId) };
  });
}
