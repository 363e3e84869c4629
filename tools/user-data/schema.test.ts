import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { userExport, type UserExport } from '@tasksvc/proto';
import { readOwnExport } from '../../services/tasks/src/import/domain/own.ts';
import { emptyPlan } from '../../services/tasks/src/import/domain/plan.ts';
import type { ReadContext } from '../../services/tasks/src/import/domain/context.ts';
import { renderUserExportSchema, SCHEMA_FILE } from './gen-schema.ts';
import { exportValidator } from './validator.ts';

/** A small but complete version-1 document, written by hand from the format's description. */
export function sampleExport(): UserExport {
  const t = '2026-03-01T08:00:00.000Z';
  const uid = '7d1f3c9e-8a51-4c43-9f6e-2b0e5b7a1c11';
  const topicId = '0b7c5d2a-3e41-4f8a-9c6b-1d2e3f4a5b6c';
  const taskId = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
  return {
    format: 'task-service-export',
    version: 1,
    exportedAt: t,
    generator: { app: 'Task Service', version: '0.1.0' },
    account: {
      id: uid,
      email: 'ada@example.test',
      name: 'Ada',
      image: null,
      createdAt: t,
      linkedAccounts: [{ provider: 'oidc', createdAt: t }],
      security: { totpEnabled: true, backupCodesRemaining: 9, passkeys: [{ name: 'Laptop', createdAt: t, lastUsedAt: null, backedUp: false }] },
      apiKeys: [{ name: 'script', prefix: 'ts_live_abc', readOnly: true, expiresAt: null, createdAt: t, lastUsedAt: null }],
      sessions: [{ createdAt: t, lastActiveAt: t, expiresAt: t, userAgent: 'Firefox', ip: '127.0.0.1', secondFactorVerifiedAt: t }],
    },
    settings: {
      timezone: 'Europe/Berlin',
      postponeLimit: 3,
      energyLevel: 'HIGH',
      reminders: {
        enabled: true,
        time: '09:00',
        streakReminderTime: '20:00',
        weeklyReviewTime: '18:00',
        streakReminderEnabled: true,
        weeklyReviewEnabled: false,
        dueToday: { enabled: false, time: '08:00' },
        overdue: { enabled: true, time: '09:00' },
        recurringDue: { enabled: false, time: '08:00' },
        morningBriefing: { enabled: false, time: '07:00' },
      },
      vacation: { startDate: null, endDate: null },
      calendarFeed: { active: false, createdAt: null },
      createdAt: t,
    },
    game: {
      coins: 60,
      level: 2,
      totalTasksCreated: 3,
      streak: { current: 2, max: 5, lastDate: '2026-02-28', shieldUsedMonth: '2026-02' },
      questStreak: { current: 1, max: 1, lastDate: '2026-02-28' },
      achievements: [{ key: 'first_task', title: 'First step', description: 'Complete a task', coinsAwarded: 10, unlockedAt: t }],
      quests: [{ date: '2026-02-28', taskId, tier: 'random', completedAt: t, createdAt: t }],
      postponements: [{ taskId, date: '2026-02-27', via: 'quest', previousDueDate: null, previousSnoozedUntil: null, restoredAt: null, createdAt: t }],
      energyCheckins: [{ date: '2026-02-28', level: 'HIGH', createdAt: t }],
      wishlist: [{ id: '2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f60', title: 'Book', price: 50, url: null, status: 'OPEN', createdAt: t, closedAt: null }],
    },
    topics: [{ id: topicId, title: 'Home', description: null, color: '#ff8800', icon: null, priority: 'NORMAL', archived: false, sequential: false, defaultEnergyLevel: null, sortOrder: 0, createdAt: t, updatedAt: t }],
    notifications: {
      channels: [{ type: 'ntfy', enabled: true, config: { server: null, topic: 'mine', priority: 3 }, secretsSet: ['token'], updatedAt: t }],
      pushDevices: [{ endpointHost: 'push.example.test', userAgent: null, createdAt: t }],
      log: [{ channel: 'ntfy', title: 'Quest', tag: 'daily-quest', status: 'sent', attempts: 1, error: null, test: false, createdAt: t }],
    },
    webhooks: [{ id: '3e4f5a6b-7c8d-4e9f-8a1b-2c3d4e5f6a7b', url: 'https://hooks.example.test/x', events: [], enabled: true, hasSecret: true, disabledReason: null, createdAt: t, updatedAt: t }],
    tasks: [
      {
        id: taskId,
        topicId,
        parentId: null,
        title: 'Water the plants',
        notes: null,
        type: 'RECURRING',
        priority: 'NORMAL',
        recurrenceType: 'WEEKDAY',
        recurrenceInterval: 1,
        recurrenceWeekdays: [0, 3],
        recurrenceWeekOfMonth: null,
        recurrenceFixed: true,
        recurrenceAnchor: '2026-02-02',
        dueDate: '2026-02-02',
        nextDueDate: '2026-03-02',
        dueTime: '07:30',
        reminders: [{ beforeDueMinutes: 15 }],
        completedAt: null,
        snoozedUntil: null,
        pausedAt: null,
        pausedUntil: null,
        postponeCount: 1,
        estimatedMinutes: 5,
        energyLevel: null,
        sortOrder: 0,
        coinValue: 1,
        isDailyQuest: false,
        dailyQuestDate: null,
        createdAt: t,
        updatedAt: t,
      },
    ],
    completions: [
      { id: '4f5a6b7c-8d9e-4f0a-9b1c-2d3e4f5a6b7c', taskId, completedAt: t, localDate: '2026-02-28', coinsAwarded: 1, wasDailyQuest: true },
      { id: '5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d', taskId: null, completedAt: t, localDate: '2026-02-20', coinsAwarded: 2, wasDailyQuest: false },
    ],
  };
}

describe('the export format (proto/src/user-data.ts) and its published JSON Schema', () => {
  const validate = exportValidator();

  it('docs/user-export.schema.json is the schema generated from proto (node tools/user-data/gen-schema.ts)', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(renderUserExportSchema());
  });

  it('a complete document passes both the zod schema and the JSON Schema', () => {
    const doc = sampleExport();
    expect(userExport.safeParse(doc).error).toBeUndefined();
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
  });

  it('a field that is not in the format (a secret leaking in) fails the JSON Schema', () => {
    const doc = sampleExport() as unknown as { account: { apiKeys: Record<string, unknown>[] }; webhooks: Record<string, unknown>[] };
    doc.account.apiKeys[0]!.keyHash = 'a'.repeat(64);
    expect(validate(doc)).toBe(false);
    expect(validate.errors?.some((e) => e.instancePath === '/account/apiKeys/0' && e.keyword === 'additionalProperties')).toBe(true);
    const other = sampleExport() as unknown as { webhooks: Record<string, unknown>[] };
    other.webhooks[0]!.secret = 'shh';
    expect(validate(other)).toBe(false);
  });

  it('another format or version, or a malformed date, is refused', () => {
    expect(validate({ ...sampleExport(), version: 2 })).toBe(false);
    expect(validate({ ...sampleExport(), exportedAt: '1 March 2026' })).toBe(false);
    expect(validate({ ...sampleExport(), format: 'momo' })).toBe(false);
  });

  it('an export written before the streak reminder and weekly review had switches gives both its daily quest switch, as they followed it (issue 55)', () => {
    const ctx = { today: '2026-03-02', timeZone: 'UTC', subtasks: true, dueTime: true, maxItems: 10_000 } as ReadContext;
    const settingsOf = (doc: UserExport) => {
      const plan = emptyPlan('tasksvc', ['export.json']);
      readOwnExport('export.json', JSON.parse(JSON.stringify(doc)) as Record<string, unknown>, ctx, plan, { count: 0 });
      return plan.settings;
    };
    const older = sampleExport();
    delete (older.settings.reminders as Partial<typeof older.settings.reminders>).streakReminderEnabled;
    delete (older.settings.reminders as Partial<typeof older.settings.reminders>).weeklyReviewEnabled;
    expect(settingsOf(older)).toMatchObject({ notificationEnabled: true, streakReminderEnabled: true, weeklyReviewEnabled: true });
    older.settings.reminders.enabled = false;
    expect(settingsOf(older)).toMatchObject({ notificationEnabled: false, streakReminderEnabled: false, weeklyReviewEnabled: false });
    // a newer export says each itself
    expect(settingsOf(sampleExport())).toMatchObject({ notificationEnabled: true, streakReminderEnabled: true, weeklyReviewEnabled: false });
  });
});
