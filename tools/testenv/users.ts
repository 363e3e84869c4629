import { randomUUID } from 'node:crypto';
import type { Pool } from '@tasksvc/runtime';
import { insertApiKey } from '@tasksvc/auth/db/api-keys.ts';
import { insertUser } from '@tasksvc/auth/db/users.ts';
import { generateApiKey } from '@tasksvc/auth/domain/tokens.ts';

/**
 * A user with a real API key, created through the auth service's own storage code, for suites
 * that exercise everything after sign-in (sign-in itself is tested end to end in services/auth).
 */
export async function createUserWithApiKey(pool: Pool, opts: { email?: string; readOnly?: boolean; id?: string } = {}): Promise<{ userId: string; email: string; apiKey: string; authorization: string }> {
  const email = opts.email ?? `user-${randomUUID().slice(0, 8)}@example.com`;
  const user = await insertUser(pool, { id: opts.id, email, name: null, image: null, emailVerified: new Date() });
  const key = generateApiKey();
  await insertApiKey(pool, { userId: user.id, name: 'test', displayPrefix: key.displayPrefix, hash: key.hash, readOnly: opts.readOnly ?? false, expiresAt: null });
  return { userId: user.id, email, apiKey: key.key, authorization: `Bearer ${key.key}` };
}
