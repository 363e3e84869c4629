import { AppError, RECENT_AUTH_MINUTES, userDeleted, type HttpCall } from '@tasksvc/proto';
import { deleteUserRows, enqueueEvent, inTransaction, userTables, type OutboxRelay } from '@tasksvc/runtime';
import * as schema from '../db/schema.ts';
import { sessionById } from '../db/sessions.ts';
import { lockUserFactors } from '../db/factors.ts';
import type { AuthDeps } from './context.ts';

/** The auth service's outbox: the deletion leaves through it, committed with the rows' removal. */
export const AUTH_OUTBOX_SCHEMA = 'auth';
const tables = userTables(schema);

/** Signed in, or a second factor proven, within the last RECENT_AUTH_MINUTES: when the session's newest proof is. */
export function recentlyAuthenticated(s: { createdAt: Date; secondFactorVerifiedAt: Date | null }, now = Date.now()): boolean {
  const newest = Math.max(s.createdAt.getTime(), s.secondFactorVerifiedAt?.getTime() ?? 0);
  return now - newest <= RECENT_AUTH_MINUTES * 60_000;
}

/**
 * DELETE /api/user. Only a browser session that signed in, or proved its second factor, in the last
 * RECENT_AUTH_MINUTES may delete the account: a stolen cookie an hour old cannot, and an API key never
 * can (it stands for a script, not the person). The auth rows (sessions, keys, factors, the user) go
 * in one transaction with the `events.user.deleted` outbox row, so the account is gone and every
 * other service is told, or neither.
 */
export function deleteAccountHandler(deps: AuthDeps, relay: OutboxRelay) {
  return async (call: HttpCall<unknown, unknown, unknown>) => {
    const u = call.user;
    if (!u) throw new AppError('UNAUTHENTICATED', 'sign in first');
    if (u.method !== 'session' || !u.sessionId) throw new AppError('FORBIDDEN', 'an account can only be deleted from a signed-in browser session, never with an API key');
    const session = await sessionById(deps.pool, u.sessionId, u.id);
    if (!session) throw new AppError('UNAUTHENTICATED', 'the session has ended; sign in again');
    if (!recentlyAuthenticated(session)) {
      throw new AppError('RECENT_AUTH_REQUIRED', `deleting the account needs a sign-in or a second-factor check from the last ${RECENT_AUTH_MINUTES} minutes: confirm with your second factor, or sign out and in again`);
    }
    const deleted = await inTransaction(deps.pool, async (c) => {
      await lockUserFactors(c, u.id);
      const rows = await deleteUserRows(c, tables, [], u.id);
      await enqueueEvent(c, AUTH_OUTBOX_SCHEMA, userDeleted, { userId: u.id, deletedAt: new Date().toISOString() });
      return rows;
    });
    relay.kick();
    deps.log.info({ userId: u.id, deleted }, 'account deleted; the other services are told over the bus');
    return { success: true as const };
  };
}
