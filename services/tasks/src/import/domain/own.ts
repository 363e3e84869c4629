import { USER_EXPORT_FORMAT, USER_EXPORT_VERSION, userExport } from '@tasksvc/proto';
import type { ReadContext } from './context.ts';
import { fileError, ImportFileError, plannedTask, type ImportPlan, type PlannedSettings } from './plan.ts';

/**
 * This app's own export (`GET /api/user/export`, proto/src/user-data.ts): the round trip. Everything
 * the tasks service holds comes back as it was — topics, tasks with their schedules, reminders and
 * order, the completion history, settings, wishlist, energy check-ins — and the game's progress
 * (coins, streaks, achievements) is restored as exported into an account that has none yet (never
 * earned anew: the import unlocks nothing). Ids are new; the export's ids are the source keys
 * (`tasksvc:task:<id>`), and a task that is already this account's own is not added again.
 *
 * Not imported, and reported: the account (sign-in, second factors, API keys, sessions), the
 * notification channels, push devices and log, the webhooks (their secrets are never exported), and
 * the quest history. docs/moving.md lists what a round trip leaves out.
 */

export function isOwnExport(doc: unknown): boolean {
  return !!doc && typeof doc === 'object' && (doc as { format?: unknown }).format === USER_EXPORT_FORMAT;
}

export function readOwnExport(file: string, doc: Record<string, unknown>, ctx: ReadContext, plan: ImportPlan, items: { count: number }): void {
  if (doc.version !== USER_EXPORT_VERSION) {
    throw fileError({ file, row: null, field: 'version' }, `version ${String(doc.version)} of the export is not one this app reads (it reads version ${USER_EXPORT_VERSION}): import it into the version that wrote it, or a newer one`);
  }
  const parsed = userExport.safeParse(doc);
  if (!parsed.success) {
    throw new ImportFileError(
      parsed.error.issues.slice(0, 20).map((i) => {
        const path = i.path.map(String);
        // a list item: its 1-based position is the row, the rest the field
        const at = path.findIndex((p) => /^\d+$/.test(p));
        return at === -1
          ? { file, row: null, field: path.join('.') || null, message: i.message }
          : { file, row: Number(path[at]) + 1, field: [...path.slice(0, at), ...path.slice(at + 1)].join('.'), message: i.message };
      }),
    );
  }
  const d = parsed.data;
  const count = (list: string, row: number) => {
    if (++items.count > ctx.maxItems) throw fileError({ file, row, field: list }, `more than ${ctx.maxItems.toLocaleString('en')} items in one import: split the file`);
  };

  d.topics.forEach((t, i) => {
    count('topics', i + 1);
    plan.topics.push({
      key: `tasksvc:topic:${t.id}`,
      at: { file, row: i + 1, field: 'topics.title' },
      title: t.title,
      description: t.description,
      color: t.color,
      icon: t.icon,
      priority: t.priority,
      archived: t.archived,
      sequential: t.sequential,
      defaultEnergyLevel: t.defaultEnergyLevel,
      sortOrder: t.sortOrder,
      createdAt: t.createdAt,
    });
  });

  const byId = new Map<string, ReturnType<typeof plannedTask>>();
  d.tasks.forEach((t, i) => {
    count('tasks', i + 1);
    const rule = t.recurrenceType ? { type: t.recurrenceType, interval: t.recurrenceInterval ?? 1, weekdays: t.recurrenceWeekdays ?? [], weekOfMonth: t.recurrenceWeekOfMonth, fixed: t.recurrenceFixed } : null;
    const parentId = (t as { parentId?: string | null }).parentId ?? null;
    const task = plannedTask(`tasksvc:task:${t.id}`, { file, row: i + 1, field: 'tasks.title' }, t.title, {
      ownId: t.id,
      notes: t.notes,
      type: t.type,
      priority: t.priority,
      topicKey: t.topicId ? `tasksvc:topic:${t.topicId}` : null,
      parentKey: parentId ? `tasksvc:task:${parentId}` : null,
      dueDate: t.dueDate,
      dueTime: t.dueTime,
      reminders: t.reminders,
      rule: t.type === 'RECURRING' ? rule : null,
      anchor: t.recurrenceAnchor,
      nextDueDate: t.nextDueDate,
      completedAt: t.completedAt,
      estimatedMinutes: t.estimatedMinutes,
      energyLevel: t.energyLevel,
      coinValue: t.coinValue,
      snoozedUntil: t.snoozedUntil,
      pausedAt: t.pausedAt,
      pausedUntil: t.pausedUntil,
      postponeCount: t.postponeCount,
      sortOrder: t.sortOrder,
      createdAt: t.createdAt,
    });
    if (t.topicId && !d.topics.some((x) => x.id === t.topicId)) {
      plan.problems.push({ file, row: i + 1, field: 'tasks.topicId', title: t.title, outcome: 'changed', message: `its topic ${t.topicId} is not in the file: imported without a topic` });
      task.topicKey = null;
    }
    byId.set(t.id, task);
    plan.tasks.push(task);
  });

  let orphans = 0;
  d.completions.forEach((c, i) => {
    count('completions', i + 1);
    const task = c.taskId ? byId.get(c.taskId) : undefined;
    if (!task) {
      orphans++;
      return;
    }
    task.completions.push({ completedAt: c.completedAt, localDate: c.localDate, coinsAwarded: c.coinsAwarded, wasDailyQuest: c.wasDailyQuest });
  });
  if (orphans > 0) plan.problems.push({ file, row: null, field: 'completions.taskId', title: null, outcome: 'skipped', message: `${orphans} completion(s) of tasks deleted before the export: history without a task is not imported` });

  const g = d.game;
  g.wishlist.forEach((w, i) => {
    plan.wishlist.push({ key: `tasksvc:wish:${w.id}`, at: { file, row: i + 1, field: 'game.wishlist.title' }, title: w.title, price: w.price, url: w.url, status: w.status, createdAt: w.createdAt, closedAt: w.closedAt });
  });
  for (const c of g.energyCheckins) plan.checkins.push({ key: `tasksvc:checkin:${c.date}`, localDate: c.date, level: c.level, createdAt: c.createdAt });

  const s = d.settings;
  const r = s.reminders;
  // An export written before the streak reminder and weekly review had their own switches carries
  // neither key (parsing fills in false): there both followed the daily quest reminder's switch.
  const written = (doc.settings as { reminders?: Record<string, unknown> } | undefined)?.reminders ?? {};
  const ownSwitch = (key: 'streakReminderEnabled' | 'weeklyReviewEnabled') => (key in written ? r[key] : r.enabled);
  const settings: PlannedSettings = {
    timezone: s.timezone,
    postponeLimit: s.postponeLimit,
    notificationEnabled: r.enabled,
    notificationTime: r.time,
    streakReminderTime: r.streakReminderTime,
    weeklyReviewTime: r.weeklyReviewTime,
    streakReminderEnabled: ownSwitch('streakReminderEnabled'),
    weeklyReviewEnabled: ownSwitch('weeklyReviewEnabled'),
    dueTodayReminderEnabled: r.dueToday.enabled,
    dueTodayReminderTime: r.dueToday.time,
    overdueReminderEnabled: r.overdue.enabled,
    overdueReminderTime: r.overdue.time,
    recurringDueReminderEnabled: r.recurringDue.enabled,
    recurringDueReminderTime: r.recurringDue.time,
    morningBriefingEnabled: r.morningBriefing.enabled,
    morningBriefingTime: r.morningBriefing.time,
    vacationStartDate: s.vacation.startDate,
    vacationEndDate: s.vacation.endDate,
  };
  if (s.energyLevel) settings.energyLevel = s.energyLevel;
  plan.settings = settings;
  plan.progress = {
    coins: g.coins,
    totalTasksCreated: g.totalTasksCreated,
    streakCurrent: g.streak.current,
    streakMax: g.streak.max,
    streakLastDate: g.streak.lastDate,
    streakShieldUsedMonth: g.streak.shieldUsedMonth,
    questStreakCurrent: g.questStreak.current,
    questStreakMax: g.questStreak.max,
    questStreakLastDate: g.questStreak.lastDate,
    achievements: g.achievements.map((a) => ({ key: a.key, coinsAwarded: a.coinsAwarded, unlockedAt: a.unlockedAt })),
  };

  const left = (field: string, n: number, what: string) => {
    if (n > 0) plan.problems.push({ file, row: null, field, title: null, outcome: 'skipped', message: what });
  };
  left('account', 1, 'the account itself (sign-in, second factors, sessions) belongs to this installation: it is not imported');
  left('account.apiKeys', d.account.apiKeys.length, `${d.account.apiKeys.length} API key(s): keys are never exported, create new ones`);
  left('notifications.channels', d.notifications.channels.length, `${d.notifications.channels.length} notification channel(s): their secrets are never exported, set them up again`);
  left('notifications.pushDevices', d.notifications.pushDevices.length, `${d.notifications.pushDevices.length} push device(s): allow notifications again in each browser`);
  left('notifications.log', d.notifications.log.length, `${d.notifications.log.length} entries of the notification log: a record of messages sent, not imported`);
  left('webhooks', d.webhooks.length, `${d.webhooks.length} webhook(s): their signing secrets are never exported, add them again`);
  left('game.quests', g.quests.length, `${g.quests.length} day(s) of quest history: the daily quest starts afresh`);
  left('game.postponements', g.postponements.length, `${g.postponements.length} postponement(s) of the quest history: not imported`);
}
