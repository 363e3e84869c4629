import { orm, type Queryable } from '@tasksvc/runtime';
import { eq, lt, sql } from 'drizzle-orm';
import { reminderActionUses } from './schema.ts';

/** Spent nonces are kept this long: longer than a link lives (7 days), so an expired link says 410, not 409. */
const KEEP = '8 days';

/**
 * Spend an action link's nonce: null when this is its first use (recorded now, in the caller's
 * transaction), else the earlier use. Also drops a few spent nonces past keeping.
 */
export async function spendActionLink(q: Queryable, use: { nonce: string; userId: string; taskId: string; action: string }): Promise<{ action: string; usedAt: Date } | null> {
  const db = orm(q);
  const [fresh] = await db.insert(reminderActionUses).values(use).onConflictDoNothing({ target: reminderActionUses.nonce }).returning({ nonce: reminderActionUses.nonce });
  if (fresh) {
    await db.delete(reminderActionUses).where(sql`${reminderActionUses.nonce} IN (SELECT ${reminderActionUses.nonce} FROM ${reminderActionUses} WHERE ${lt(reminderActionUses.usedAt, sql`now() - ${KEEP}::interval`)} LIMIT 100)`);
    return null;
  }
  const [earlier] = await db.select({ action: reminderActionUses.action, usedAt: reminderActionUses.usedAt }).from(reminderActionUses).where(eq(reminderActionUses.nonce, use.nonce));
  return earlier ?? { action: 'used', usedAt: new Date() };
}
