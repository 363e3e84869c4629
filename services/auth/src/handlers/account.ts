import { AppError, type HttpCall } from '@tasksvc/proto';
import { generateApiKey } from '../domain/tokens.ts';
import { deleteApiKey, insertApiKey, listApiKeys, type ApiKeyRow } from '../db/api-keys.ts';
import { deleteAllSessions, deleteSession, listSessions } from '../db/sessions.ts';
import { userById } from '../db/users.ts';
import { requireSession, requireUser, type AuthDeps } from './context.ts';

type EmptyCall = HttpCall<unknown, unknown, unknown>;
type IdCall = HttpCall<{ id: string }, unknown, unknown>;

/** A user may hold this many API keys. */
export const MAX_API_KEYS = 25;

function keySummary(k: ApiKeyRow) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.displayPrefix,
    readOnly: k.readOnly,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
  };
}

export function accountHandlers(deps: AuthDeps) {
  return {
    me: async (call: EmptyCall) => {
      const u = requireUser(call.user);
      const row = await userById(deps.pool, u.id);
      if (!row) throw new AppError('UNAUTHENTICATED', 'the user no longer exists');
      return { id: u.id, email: row.email ?? '', name: row.name, isAdmin: u.isAdmin, secondFactorOk: u.secondFactorOk, method: u.method };
    },

    listSessions: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      const rows = await listSessions(deps.pool, s.userId);
      return {
        sessions: rows.map((r) => ({
          id: r.id,
          current: r.id === s.sessionId,
          createdAt: r.createdAt.toISOString(),
          lastActiveAt: r.lastActiveAt.toISOString(),
          expiresAt: r.expires.toISOString(),
          userAgent: r.userAgent,
          ip: r.ip,
          secondFactorVerifiedAt: r.secondFactorVerifiedAt?.toISOString() ?? null,
        })),
      };
    },

    revokeSession: async (call: IdCall) => {
      const s = requireSession(call.user);
      if (!(await deleteSession(deps.pool, call.params.id, s.userId))) throw new AppError('NOT_FOUND', 'no such session');
      return null;
    },

    revokeAllSessions: async (call: EmptyCall) => {
      const s = requireSession(call.user);
      return { revoked: await deleteAllSessions(deps.pool, s.userId) };
    },

    listApiKeys: async (call: EmptyCall) => {
      const u = requireUser(call.user);
      return { keys: (await listApiKeys(deps.pool, u.id)).map(keySummary) };
    },

    createApiKey: async (call: HttpCall<unknown, unknown, { name: string; readOnly: boolean; expiresAt?: string | null | undefined }>) => {
      // Keys are made in a browser session: a key cannot mint further keys.
      const s = requireSession(call.user);
      const expiresAt = call.body.expiresAt ? new Date(call.body.expiresAt) : null;
      if (expiresAt && expiresAt.getTime() <= Date.now()) {
        throw new AppError('VALIDATION_FAILED', 'expiresAt must be in the future', [{ path: 'body.expiresAt', message: 'must be in the future' }]);
      }
      if ((await listApiKeys(deps.pool, s.userId)).length >= MAX_API_KEYS) throw new AppError('LIMIT_EXCEEDED', `at most ${MAX_API_KEYS} API keys per user`);
      const { key, hash, displayPrefix } = generateApiKey();
      const row = await insertApiKey(deps.pool, { userId: s.userId, name: call.body.name, displayPrefix, hash, readOnly: call.body.readOnly, expiresAt });
      return { ...keySummary(row), key };
    },

    revokeApiKey: async (call: IdCall) => {
      const u = requireUser(call.user);
      if (!(await deleteApiKey(deps.pool, call.params.id, u.id))) throw new AppError('NOT_FOUND', 'no such API key');
      return null;
    },
  };
}
