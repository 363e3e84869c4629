import { randomBytes } from 'node:crypto';
import type { UserExport } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystem, type RunningSystem } from '../system.ts';
import { testSystemConfig, until } from '../testenv/index.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { seedUserEverywhere, startFailingReceiver, type SeededUser } from './seed.ts';

/**
 * The own format's round trip (docs/moving.md, "The round trip"), on the whole system: a user with
 * rows in every table is exported, the file is imported into a new account (preview → confirm), and
 * that account's export is the same document apart from what the docs list: ids, the new account's
 * timestamps, and the parts that belong to an account and are never imported.
 */

/** Ids replaced by their order of first appearance, so two documents with the same shape compare equal. */
const ID_KEYS = new Set(['id', 'taskId', 'topicId', 'parentId']);

function comparable(doc: UserExport): unknown {
  // documented as not imported (account, installation, quest history) or as the new account's own
  const { exportedAt, account, notifications, webhooks, ...rest } = doc;
  void [exportedAt, account, notifications, webhooks];
  const { calendarFeed, createdAt, updatedAt, ...settings } = rest.settings as Record<string, unknown>;
  void [calendarFeed, createdAt, updatedAt];
  const { quests, postponements, ...game } = rest.game as Record<string, unknown>;
  void [quests, postponements];
  const ids = new Map<string, string>();
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v)
          .filter(([k]) => k !== 'updatedAt')
          .map(([k, x]) => [k, ID_KEYS.has(k) && typeof x === 'string' ? (ids.get(x) ?? ids.set(x, `#${ids.size}`).get(x)) : walk(x)]),
      );
    }
    return v;
  };
  // the quest history stays behind, the tasks' quest marks with it
  const tasks = rest.tasks.map(({ isDailyQuest, dailyQuestDate, ...t }) => (void [isDailyQuest, dailyQuestDate], t));
  // within a day completions are listed by id
  const completions = [...rest.completions].sort((a, b) => a.localDate.localeCompare(b.localDate) || a.completedAt.localeCompare(b.completedAt));
  return walk({ ...rest, tasks, completions, settings, game });
}

describe('own export → import into a new account → export', () => {
  let sys: RunningSystem;
  let receiver: Awaited<ReturnType<typeof startFailingReceiver>>;
  let alice: SeededUser;
  const authSecret = `roundtrip-${randomBytes(16).toString('hex')}`;

  beforeAll(async () => {
    receiver = await startFailingReceiver();
    sys = await startSystem(await testSystemConfig({ OUTBOUND_ALLOW_LIST: '127.0.0.1', TOTP_ENCRYPTION_KEY: randomBytes(32).toString('hex'), RATE_LIMIT_WRITES: 'true', AUTH_SECRET: authSecret }));
    alice = await seedUserEverywhere({ url: sys.url, pool: sys.pool, authSecret }, receiver.url, { tasks: 12 });
  }, 180_000);

  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  const call = async (authorization: string, method: string, path: string, body?: string) => {
    const res = await fetch(`${sys.url}${path}`, { method, headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/octet-stream' }) }, body });
    return { status: res.status, text: await res.text() };
  };

  it('gives the same document apart from ids, the new account\'s timestamps and what is never imported', async () => {
    const first = await call(alice.authorization, 'GET', '/api/user/export');
    expect(first.status).toBe(200);
    const before = JSON.parse(first.text) as UserExport;
    expect(before.tasks.some((t) => t.parentId)).toBe(true);
    expect(before.completions.length).toBeGreaterThan(0);

    const carol = await createUserWithApiKey(sys.pool, { email: `carol-${randomBytes(4).toString('hex')}@example.test` });
    const up = await call(carol.authorization, 'POST', '/api/user/import?filename=task-service-export.json', first.text);
    expect(up.status, up.text).toBe(201);
    const preview = (JSON.parse(up.text) as { import: { id: string; format: string; status: string } }).import;
    expect(preview).toMatchObject({ format: 'tasksvc', status: 'previewed' });
    const confirm = await call(carol.authorization, 'POST', `/api/user/import/${preview.id}/confirm`);
    expect(confirm.status, confirm.text).toBe(202);
    const done = await until(async () => {
      const r = JSON.parse((await call(carol.authorization, 'GET', `/api/user/import/${preview.id}`)).text) as { import: { status: string } };
      return r.import.status === 'running' ? undefined : r.import;
    }, 'the import to finish');
    expect(done.status, JSON.stringify(done)).toBe('done');

    const second = await call(carol.authorization, 'GET', '/api/user/export');
    expect(second.status).toBe(200);
    const after = JSON.parse(second.text) as UserExport;
    expect(after.account.id).toBe(carol.userId);
    expect(after.tasks).toHaveLength(before.tasks.length);
    expect(comparable(after)).toEqual(comparable(before));
  });
});
