import { AppError, authAdminUsersRpc, authApi, exportAccountRpc, userDataApi, userDeleted, authjsRpc, resolveIdentityRpc, secondFactorPageRpc, type HttpRoute } from '@tasksvc/proto';
import { startOutboxRelay, type ServiceDefinition, type Subscription } from '@tasksvc/runtime';
import { userStats } from './db/stats.ts';
import { exportAccount } from './db/user-data.ts';
import { userNames } from './db/users.ts';
import { accountHandlers } from './handlers/account.ts';
import { createAuthjsHandler } from './handlers/authjs.ts';
import { AUTH_OUTBOX_SCHEMA, deleteAccountHandler } from './handlers/delete-account.ts';
import type { AuthDeps } from './handlers/context.ts';
import { changingIdentity, pendingPage, resolveIdentity } from './handlers/identity.ts';
import { passkeyHandlers } from './handlers/passkeys.ts';
import { twoFactorHandlers } from './handlers/two-factor.ts';

export interface AuthServiceOptions {
  /** seconds since the epoch for TOTP checks; tests pin it so they never wait for a 30-second step */
  clock?: () => number;
}

/** Sign-in (Auth.js), sessions, API keys, second factors, and the users part of the admin statistics. */
export function createAuthService(opts: AuthServiceOptions = {}): ServiceDefinition {
  return {
    name: 'auth',
    migrations: { schema: 'auth', dir: new URL('../migrations', import.meta.url).pathname, outboxes: [AUTH_OUTBOX_SCHEMA] },
    async start({ bus, pool, config, log }) {
      const deps: AuthDeps = { bus, pool, config, log };
      const twoFactor = twoFactorHandlers(deps, opts);
      const passkeys = passkeyHandlers(deps);
      const account = accountHandlers(deps);
      // a deletion event is deleted once it is out: the database keeps no trace of the user it named
      const relay = startOutboxRelay({ pool, bus, schema: AUTH_OUTBOX_SCHEMA, events: [userDeleted], log, keepPublished: false });
      const subs: Subscription[] = [];
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const route = <P, Q, B, R>(r: HttpRoute<P, Q, B, R>, handler: (call: any) => Promise<R>) =>
        subs.push(bus.serve(r.rpc, r.method === 'GET' ? handler : (call) => changingIdentity(bus, call.user?.id, () => handler(call))));

      subs.push(bus.serve(resolveIdentityRpc, (req) => resolveIdentity(deps, req)));
      subs.push(bus.serve(secondFactorPageRpc, (req) => pendingPage(deps, req)));
      subs.push(bus.serve(authjsRpc, createAuthjsHandler(deps)));

      route(authApi.me, account.me);
      route(authApi.twoFactorStatus, twoFactor.status);
      route(authApi.totpSetup, twoFactor.totpSetup);
      route(authApi.totpEnable, twoFactor.totpEnable);
      route(authApi.totpDisable, twoFactor.totpDisable);
      route(authApi.verify, twoFactor.verify);
      route(authApi.backupCodes, twoFactor.regenerateBackupCodes);
      route(authApi.passkeys, passkeys.list);
      route(authApi.passkeyRegisterOptions, passkeys.registerOptions);
      route(authApi.passkeyRegisterVerify, passkeys.registerVerify);
      route(authApi.passkeyDelete, passkeys.remove);
      route(authApi.passkeyLoginOptions, passkeys.loginOptions);
      route(authApi.passkeyLogin, passkeys.login);
      route(authApi.passkeySignupInfo, passkeys.signupInfo);
      route(authApi.passkeySignupOptions, passkeys.signupOptions);
      route(authApi.passkeySignup, passkeys.signup);
      route(authApi.passkeyVerifyOptions, passkeys.verifyOptions);
      route(authApi.passkeyVerify, passkeys.verify);
      route(authApi.sessions, account.listSessions);
      route(authApi.sessionRevoke, account.revokeSession);
      route(authApi.sessionsRevokeAll, account.revokeAllSessions);
      route(authApi.apiKeys, account.listApiKeys);
      route(authApi.apiKeyCreate, account.createApiKey);
      route(authApi.apiKeyRevoke, account.revokeApiKey);
      route(userDataApi.deleteAccount, deleteAccountHandler(deps, relay));
      relay.kick();
      // the user's export: the gateway asks each service for its part
      subs.push(
        bus.serve(exportAccountRpc, async ({ userId }) => {
          const account = await exportAccount(pool, userId);
          if (!account) throw new AppError('NOT_FOUND', 'no such user');
          return account;
        }),
      );
      // the admin page's user part (the gateway gathers the page)
      subs.push(bus.serve(authAdminUsersRpc, async ({ names }) => ({ users: await userStats(pool), names: names.length ? [...(await userNames(pool, names))].map(([userId, name]) => ({ userId, name })) : [] })));

      return {
        async stop() {
          for (const s of subs) await s.stop();
          await relay.stop();
        },
      };
    },
  };
}

export const authService: ServiceDefinition = createAuthService();
