import type { ExportedAccount } from '@tasksvc/proto';
import { orm, type Queryable } from '@tasksvc/runtime';
import { asc, eq } from 'drizzle-orm';
import { listApiKeys } from './api-keys.ts';
import { backupCodesRemaining, factorSummary, listAuthenticators } from './factors.ts';
import { listSessions } from './sessions.ts';
import { accounts, users } from './schema.ts';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The auth service's part of the user's export: never a token, hash, secret, code or key. Null when the user does not exist. */
export async function exportAccount(q: Queryable, userId: string): Promise<ExportedAccount | null> {
  const db = orm(q);
  const [user] = await db.select({ id: users.id, email: users.email, name: users.name, image: users.image, createdAt: users.createdAt }).from(users).where(eq(users.id, userId));
  if (!user) return null;
  const [linked, factors, codes, passkeys, keys, sessions] = await Promise.all([
    db.select({ provider: accounts.provider, createdAt: accounts.createdAt }).from(accounts).where(eq(accounts.userId, userId)).orderBy(asc(accounts.createdAt)),
    factorSummary(q, userId),
    backupCodesRemaining(q, userId),
    listAuthenticators(q, userId),
    listApiKeys(q, userId),
    listSessions(q, userId),
  ]);
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    image: user.image,
    createdAt: user.createdAt.toISOString(),
    linkedAccounts: linked.map((a) => ({ provider: a.provider, createdAt: a.createdAt.toISOString() })),
    security: {
      totpEnabled: factors.totpEnabled,
      backupCodesRemaining: codes,
      passkeys: passkeys.map((p) => ({ name: p.name, createdAt: p.createdAt.toISOString(), lastUsedAt: iso(p.lastUsedAt), backedUp: p.backedUp })),
    },
    apiKeys: keys.map((k) => ({ name: k.name, prefix: k.displayPrefix, readOnly: k.readOnly, expiresAt: iso(k.expiresAt), createdAt: k.createdAt.toISOString(), lastUsedAt: iso(k.lastUsedAt) })),
    sessions: sessions.map((s) => ({
      createdAt: s.createdAt.toISOString(),
      lastActiveAt: s.lastActiveAt.toISOString(),
      expiresAt: s.expires.toISOString(),
      userAgent: s.userAgent,
      ip: s.ip,
      secondFactorVerifiedAt: iso(s.secondFactorVerifiedAt),
    })),
  };
}
