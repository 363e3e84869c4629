import { adminApi, authAdminUsersRpc, tasksAdminStatsRpc, type AdminStats, type HttpCall, type Identity } from '@tasksvc/proto';
import { createLogger, createMemoryBus, type Bus } from '@tasksvc/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { serveAdmin } from './admin.ts';

const admin: Identity = { id: '00000000-0000-4000-8000-000000000001', email: 'a@example.test', method: 'test', readOnly: false, secondFactorOk: true, isAdmin: true };
const ranked = '00000000-0000-4000-8000-000000000002';
const users: AdminStats['users'] = { total: 2, new7d: 1, new30d: 2, active7d: 1, active30d: 2, byProvider: [{ provider: 'oidc', users: 2 }], withSecondFactor: 0 };
const call = (user: Identity | null): HttpCall<unknown, unknown, unknown> => ({ user, params: {}, query: {}, body: undefined });

let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.reverse()) await stop();
  stops = [];
});

/** A bus with the gateway's admin routes and the auth service's user part (answering for the names it was asked). */
function system(): { bus: Bus; asked: string[][] } {
  const log = createLogger('test', 'silent');
  const bus = createMemoryBus(log);
  const asked: string[][] = [];
  const subs = [
    ...serveAdmin(bus, log),
    bus.serve(authAdminUsersRpc, async ({ names }) => {
      asked.push(names);
      return { users, names: names.map((userId) => ({ userId, name: userId === ranked ? 'bob' : null })) };
    }),
  ];
  stops.push(async () => {
    for (const s of subs) await s.stop();
  });
  return { bus, asked };
}

describe('admin statistics, gathered by the gateway', () => {
  it("names the tasks service's ranked users from the auth service's answer", async () => {
    const { bus, asked } = system();
    const tasks = bus.serve(tasksAdminStatsRpc, async () => ({
      tasksTotal: 3, tasksOpen: 2, tasksCompleted: 1, completionsTotal: 1, completions7d: 1, completions30d: 1, usersWithTasks: 1, averageTasksPerUser: 3,
      topUsers: [{ userId: ranked, coins: 10, level: 1, tasksCompleted: 1 }],
    }));
    stops.push(() => tasks.stop());

    const stats = await bus.request(adminApi.stats.rpc, call(admin));
    expect(asked).toEqual([[ranked]]);
    expect(stats.users).toEqual(users);
    expect(stats.tasks?.topUsers).toEqual([{ userId: ranked, name: 'bob', coins: 10, level: 1, tasksCompleted: 1 }]);
    // The scheduler is not running here: its parts are null, the page still answers.
    expect(stats.cron).toBeNull();
    expect(stats.update).toBeNull();
  });

  it('leaves the tasks part null when the tasks service does not answer, and asks auth for no names', async () => {
    const { bus, asked } = system();
    const stats = await bus.request(adminApi.stats.rpc, call(admin));
    expect(stats.tasks).toBeNull();
    expect(stats.users.total).toBe(2);
    expect(asked).toEqual([[]]);
  });

  it('refuses a bus caller that is not an administrator, whatever the route check did', async () => {
    const { bus } = system();
    await expect(bus.request(adminApi.stats.rpc, call({ ...admin, isAdmin: false }))).rejects.toMatchObject({ code: 'ADMIN_ONLY' });
    await expect(bus.request(adminApi.metrics.rpc, call(null))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});
