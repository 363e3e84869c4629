import { orm, type Queryable } from '@tasksvc/runtime';
import { and, asc, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import { accounts, users } from './schema.ts';

const userColumns = { id: users.id, email: users.email, name: users.name, image: users.image, emailVerified: users.emailVerified };
export type UserRow = Pick<typeof users.$inferSelect, keyof typeof userColumns>;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (v: string): boolean => UUID_RE.test(v);

export async function insertUser(q: Queryable, u: { id?: string; email: string | null; name: string | null; image: string | null; emailVerified: Date | null }): Promise<UserRow> {
  const [row] = await orm(q).insert(users).values(u).returning(userColumns);
  return row!;
}

export async function userById(q: Queryable, id: string): Promise<UserRow | null> {
  if (!isUuid(id)) return null;
  const [row] = await orm(q).select(userColumns).from(users).where(eq(users.id, id));
  return row ?? null;
}

/** The display names of these users (by id; an id with no user is absent). */
export async function userNames(q: Queryable, ids: string[]): Promise<Map<string, string | null>> {
  const rows = await orm(q).select({ id: users.id, name: users.name }).from(users).where(inArray(users.id, ids));
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** Auth.js asks this to refuse silent linking: an existing user with the address blocks a new account. */
export async function userByEmail(q: Queryable, email: string): Promise<UserRow | null> {
  const [row] = await orm(q)
    .select(userColumns)
    .from(users)
    .where(sql`lower(${users.email}) = lower(${email})`)
    .orderBy(asc(users.createdAt))
    .limit(1);
  return row ?? null;
}

export async function userByAccount(q: Queryable, provider: string, providerAccountId: string): Promise<UserRow | null> {
  const [row] = await orm(q)
    .select(userColumns)
    .from(accounts)
    .innerJoin(users, eq(users.id, accounts.userId))
    .where(and(eq(accounts.provider, provider), eq(accounts.providerAccountId, providerAccountId)));
  return row ?? null;
}

/** Change the given fields (a field left out stays as it is). */
export async function updateUser(q: Queryable, id: string, u: { email?: string | null; name?: string | null; image?: string | null; emailVerified?: Date | null }): Promise<UserRow> {
  const db = orm(q);
  const set = Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined));
  const [row] = Object.keys(set).length > 0 ? await db.update(users).set(set).where(eq(users.id, id)).returning(userColumns) : await db.select(userColumns).from(users).where(eq(users.id, id));
  if (!row) throw new Error(`user ${id} not found`);
  return row;
}

/** What Auth.js hands over when it links a provider account (the tokens in it are never stored). */
export interface AccountInput {
  userId: string;
  type: string;
  provider: string;
  providerAccountId: string;
}

/**
 * Link a provider account. Only the link is kept: the provider's access, refresh and ID tokens are
 * never used after sign-in, so they are not stored at all (migration 0005 cleared the old ones and
 * forbids them).
 */
export async function insertAccount(q: Queryable, a: AccountInput): Promise<void> {
  await orm(q).insert(accounts).values({ userId: a.userId, type: a.type, provider: a.provider, providerAccountId: a.providerAccountId });
}

/** Record activity at most every five minutes per user (for the admin's active-user counts). */
export async function touchUser(q: Queryable, id: string): Promise<void> {
  await orm(q)
    .update(users)
    .set({ lastActiveAt: sql`now()` })
    .where(and(eq(users.id, id), or(isNull(users.lastActiveAt), lt(users.lastActiveAt, sql`now() - interval '5 minutes'`))));
}
