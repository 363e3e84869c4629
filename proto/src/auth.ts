import { z } from 'zod';
import { defineRpc } from './bus.ts';
import { identity, type AnyRoute } from './http.ts';

/**
 * The gateway asks the auth service who a request belongs to, from its session cookie or its
 * `Authorization: Bearer <api key>` header. Null means anonymous.
 */
export const resolveIdentityRpc = defineRpc(
  'auth.identity.resolve',
  z.object({ cookie: z.string().optional(), authorization: z.string().optional() }),
  identity.nullable(),
);

/** HTTP routes of the auth service (2FA, passkeys, sessions, API keys, admin). */
export const authRoutes: AnyRoute[] = [];
