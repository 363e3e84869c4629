import { orm, type Queryable } from '@tasksvc/runtime';
import { and, desc, eq, gt, lt, sql } from 'drizzle-orm';
import { sessions, users } from './schema.ts';
import type { UserRow } from './users.ts';

/** A session as its owner sees it: never the token hash. */
const sessionColumns = {
  id: sessions.id,
  userId: sessions.userId,
  expires: sessions.expires,
  createdAt: sessions.createdAt,
  lastActiveAt: sessions.lastActiveAt,
  secondFactorVerifiedAt: sessions.secondFactorVerifiedAt,
  userAgent: sessions.userAgent,
  ip: sessions.ip,
};
export type SessionRow = Omit<typeof sessions.$inferSelect, 'tokenHash'>;

const live = () => gt(sessions.expires, sql`now()`);
const own = (id: string, userId: string) => and(eq(sessions.id, id), eq(sessions.userId, userId));

export async function insertSession(
  q: Queryable,
  s: { tokenHash: string; userId: string; expires: Date; ip?: string | null | undefined; userAgent?: string | null | undefined; secondFactorVerified?: boolean },
): Promise<SessionRow> {
  // Expired sessions are dropped as new ones are made (#56.13), as WebAuthn challenges are: sign-ins are
  // rare and the table is then only live sessions, so no sweeper is needed.
  await orm(q).delete(sessions).where(lt(sessions.expires, sql`now()`));
  const [row] = await orm(q)
    .insert(sessions)
    .values({
      tokenHash: s.tokenHash,
      userId: s.userId,
      expires: s.expires,
      ip: s.ip ?? null,
      userAgent: s.userAgent ? s.userAgent.slice(0, 512) : null,
      secondFactorVerifiedAt: s.secondFactorVerified ? sql`now()` : null,
    })
    .returning(sessionColumns);
  return row!;
}

/** The live session for a token hash, with its user; expired sessions are not returned. */
export async function sessionAndUser(q: Queryable, tokenHash: string): Promise<{ session: SessionRow; user: UserRow; userLastActiveAt: Date | null } | null> {
  const [row] = await orm(q)
    .select({
      session: sessionColumns,
      user: { id: users.id, email: users.email, name: users.name, image: users.image, emailVerified: users.emailVerified },
      userLastActiveAt: users.lastActiveAt,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(and(eq(sessions.tokenHash, tokenHash), live()));
  return row ?? null;
}

export async function updateSessionExpiry(q: Queryable, tokenHash: string, expires: Date): Promise<SessionRow | null> {
  const [row] = await orm(q).update(sessions).set({ expires }).where(eq(sessions.tokenHash, tokenHash)).returning(sessionColumns);
  return row ?? null;
}

export async function deleteSessionByHash(q: Queryable, tokenHash: string): Promise<SessionRow | null> {
  const [row] = await orm(q).delete(sessions).where(eq(sessions.tokenHash, tokenHash)).returning(sessionColumns);
  return row ?? null;
}

/** Throttled: at most one write per session per minute. */
export async function touchSession(q: Queryable, id: string): Promise<void> {
  await orm(q)
    .update(sessions)
    .set({ lastActiveAt: sql`now()` })
    .where(and(eq(sessions.id, id), lt(sessions.lastActiveAt, sql`now() - interval '1 minute'`)));
}

export async function markSecondFactorVerified(q: Queryable, sessionId: string, userId: string): Promise<void> {
  await orm(q).update(sessions).set({ secondFactorVerifiedAt: sql`now()` }).where(own(sessionId, userId));
}

export async function sessionById(q: Queryable, id: string, userId: string): Promise<SessionRow | null> {
  const [row] = await orm(q)
    .select(sessionColumns)
    .from(sessions)
    .where(and(own(id, userId), live()));
  return row ?? null;
}

export async function listSessions(q: Queryable, userId: string): Promise<SessionRow[]> {
  return orm(q)
    .select(sessionColumns)
    .from(sessions)
    .where(and(eq(sessions.userId, userId), live()))
    .orderBy(desc(sessions.lastActiveAt), desc(sessions.createdAt));
}

export async function deleteSession(q: Queryable, id: string, userId: string): Promise<boolean> {
  const r = await orm(q).delete(sessions).where(own(id, userId));
  return (r.rowCount ?? 0) > 0;
}

export async function deleteAllSessions(q: Queryable, userId: string): Promise<number> {
  const r = await orm(q).delete(sessions).where(eq(sessions.userId, userId));
  return r.rowCount ?? 0;
}
