import { resolveIdentityRpc } from '@tasksvc/proto';
import type { Bus, Subscription } from '@tasksvc/runtime';

/**
 * TEST DOUBLE for the auth service's identity resolution (`auth.identity.resolve`; the real one has
 * its own tests): `Authorization: Bearer test-<uuid>` is a read-write user with that id,
 * `Bearer ro-<uuid>` the same user through a read-only API key; anything else is anonymous.
 */
export function serveTestIdentities(bus: Bus): Subscription {
  return bus.serve(resolveIdentityRpc, async ({ authorization }) => {
    const m = /^Bearer (test|ro)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(authorization ?? '');
    if (!m) return null;
    return { id: m[2]!, email: `${m[2]}@example.test`, method: 'test' as const, readOnly: m[1] === 'ro', secondFactorOk: true, isAdmin: false };
  });
}
