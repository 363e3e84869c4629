import { randomUUID } from 'node:crypto';
import type { ImportCount } from '@tasksvc/proto';
import { inTransaction, type Pool, type PoolClient } from '@tasksvc/runtime';
import {
  claimSources,
  existingTopicIds,
  finishImport,
  insertAchievementRows,
  insertCheckinRows,
  insertCompletionRows,
  insertOutboxRows,
  insertTaskRows,
  insertTopicRows,
  insertWishlistRows,
  hasAchievements,
  knownSources,
  ownTaskIds,
  reserveTasks,
  topicsByTitle,
} from '../db/imports.ts';
import { lockProfile, updateProfile } from '../db/profiles.ts';
import type { tasks } from '../db/schema.ts';
import { SCHEMA, taskEventRow } from '../handlers/common.ts';
import { planSize, type ImportPlan, type PlannedTask } from './domain/plan.ts';

/**
 * Write a confirmed plan, all of it or nothing: one transaction. Items an earlier import brought
 * (their source keys are remembered per user) are left out, so the same file twice adds nothing.
 * Imported tasks get one `task.created` event each, all committed together; they earn no coins and
 * unlock nothing (their completion history is marked imported: no achievement counts it).
 */

export interface ApplyResult {
  counts: ImportCount[];
  finishedAt: string;
}

type TaskInsert = typeof tasks.$inferInsert;

/** Whether the tasks table has a parent column (the subtasks feature); the plan's parents are kept only then. */
export interface ApplyOptions {
  /** the user's zone the plan was read in */
  timeZone: string;
  subtasks: boolean;
  dueTime: boolean;
  /** called after each batch with items written so far (on another connection: the transaction is not visible) */
  progress: (done: number) => Promise<void>;
  signal: AbortSignal;
}

export async function applyPlan(pool: Pool, importId: string, userId: string, plan: ImportPlan, opts: ApplyOptions): Promise<ApplyResult> {
  return inTransaction(pool, (c) => applyIn(c, importId, userId, plan, opts));
}

async function applyIn(c: PoolClient, importId: string, userId: string, plan: ImportPlan, opts: ApplyOptions): Promise<ApplyResult> {
  const profile = await lockProfile(c, userId);
  const now = new Date();
  let done = 0;
  const step = async (n: number) => {
    if (opts.signal.aborted) throw new Error('the service is stopping: the import was rolled back, nothing was written; confirm it again');
    done += n;
    await opts.progress(done);
  };

  const keys = [...plan.topics.map((t) => t.key), ...plan.tasks.map((t) => t.key), ...plan.wishlist.map((w) => w.key), ...plan.checkins.map((x) => x.key)];
  const known = await knownSources(c, userId, keys);
  const own = await ownTaskIds(c, userId, plan.tasks.flatMap((t) => (t.ownId ? [t.ownId] : [])));
  const count = (kind: ImportCount['kind'], toImport: number, alreadyImported: number): ImportCount => ({ kind, toImport, alreadyImported });

  // ── topics: an earlier import's topic, else one of the same title, else a new one ──
  const topicIds = new Map<string, string>();
  const byTitle = await topicsByTitle(c, userId);
  const stillThere = await existingTopicIds(c, userId, [...known.values()].filter((v): v is string => !!v));
  const newTopics: { key: string; id: string }[] = [];
  let topicsAlready = 0;
  for (const t of plan.topics) {
    const earlier = known.get(t.key);
    if (earlier && stillThere.has(earlier)) {
      topicIds.set(t.key, earlier);
      topicsAlready++;
      continue;
    }
    const sameTitle = byTitle.get(t.title.toLowerCase());
    const id = sameTitle ?? randomUUID();
    topicIds.set(t.key, id);
    if (!sameTitle) {
      newTopics.push({ key: t.key, id });
      byTitle.set(t.title.toLowerCase(), id);
    } else topicsAlready++;
  }
  const topicClaims = await claimSources(
    c,
    userId,
    importId,
    plan.topics.filter((t) => !known.has(t.key)).map((t) => ({ key: t.key, kind: 'topic', targetId: topicIds.get(t.key)! })),
  );
  const topicRows = plan.topics
    .filter((t) => newTopics.some((n) => n.key === t.key) && (topicClaims.has(t.key) || known.has(t.key)))
    .map((t, i) => ({
      id: topicIds.get(t.key)!,
      userId,
      title: t.title,
      description: t.description,
      color: t.color,
      icon: t.icon,
      priority: t.priority,
      archived: t.archived,
      sequential: t.sequential,
      defaultEnergyLevel: t.defaultEnergyLevel,
      sortOrder: t.sortOrder ?? 1_000 + i,
      ...(t.createdAt ? { createdAt: new Date(t.createdAt) } : {}),
      imported: true,
    }));
  await insertTopicRows(c, topicRows);
  await step(plan.topics.length);

  // ── tasks ──
  const fresh = plan.tasks.filter((t) => !known.has(t.key) && !(t.ownId && own.has(t.ownId)));
  const ids = new Map<string, string>(fresh.map((t) => [t.key, randomUUID()]));
  for (const t of plan.tasks) if (known.get(t.key)) ids.set(t.key, known.get(t.key)!);
  const claimed = await claimSources(
    c,
    userId,
    importId,
    fresh.map((t) => ({ key: t.key, kind: 'task', targetId: ids.get(t.key)! })),
  );
  const writing = fresh.filter((t) => claimed.has(t.key));
  // parents first, so a subtask's parent exists when it is written
  writing.sort((a, b) => Number(!!a.parentKey) - Number(!!b.parentKey));
  // the source's own order where it has one (this app's export), else after every task there is
  const highest = writing.reduce((m, t) => Math.max(m, t.sortOrder ?? -1), -1);
  const first = writing.length > 0 ? await reserveTasks(c, userId, writing.length, highest + 1) : 0;
  const rows: TaskInsert[] = [];
  const events: ReturnType<typeof taskEventRow>[] = [];
  writing.forEach((t, i) => {
    const row = taskRow(t, { id: ids.get(t.key)!, userId, sortOrder: t.sortOrder ?? first + i, topicId: t.topicKey ? (topicIds.get(t.topicKey) ?? null) : null, now, parentId: t.parentKey ? (ids.get(t.parentKey) ?? null) : null }, opts);
    rows.push(row);
    events.push(
      taskEventRow(
        'task.created',
        {
          id: row.id!,
          userId,
          title: row.title,
          type: row.type,
          priority: row.priority ?? 'NORMAL',
          topicId: row.topicId ?? null,
          parentId: row.parentId ?? null,
          dueDate: row.dueDate ?? null,
          dueTime: row.dueTime ?? null,
          nextDueDate: row.nextDueDate ?? null,
          completedAt: row.completedAt ?? null,
          reminders: row.reminders ?? [],
          createdAt: row.createdAt as Date,
        },
        opts.timeZone,
      ),
    );
  });
  for (let i = 0; i < rows.length; i += 1000) {
    await insertTaskRows(c, rows.slice(i, i + 1000));
    await step(Math.min(1000, rows.length - i));
  }
  const completions = writing.flatMap((t) =>
    t.completions.map((x) => ({
      taskId: ids.get(t.key)!,
      userId,
      completedAt: new Date(x.completedAt),
      localDate: x.localDate,
      coinsAwarded: x.coinsAwarded ?? 0,
      wasDailyQuest: x.wasDailyQuest ?? false,
      imported: true,
    })),
  );
  await insertCompletionRows(c, completions);
  await insertOutboxRows(c, SCHEMA, events);

  // ── wishlist and energy check-ins ──
  const wishClaims = await claimSources(
    c,
    userId,
    importId,
    plan.wishlist.filter((w) => !known.has(w.key)).map((w) => ({ key: w.key, kind: 'wishlist', targetId: null })),
  );
  const wishes = plan.wishlist.filter((w) => wishClaims.has(w.key));
  await insertWishlistRows(
    c,
    wishes.map((w) => ({
      userId,
      title: w.title,
      price: w.price,
      url: w.url,
      status: w.status,
      ...(w.createdAt ? { createdAt: new Date(w.createdAt) } : {}),
      closedAt: w.closedAt ? new Date(w.closedAt) : null,
      imported: true,
    })),
  );
  const checkinClaims = await claimSources(
    c,
    userId,
    importId,
    plan.checkins.filter((x) => !known.has(x.key)).map((x) => ({ key: x.key, kind: 'checkin', targetId: null })),
  );
  const checkins = plan.checkins.filter((x) => checkinClaims.has(x.key));
  await insertCheckinRows(c, checkins.map((x) => ({ userId, localDate: x.localDate, level: x.level, ...(x.createdAt ? { createdAt: new Date(x.createdAt) } : {}) })));
  await step(plan.wishlist.length + plan.checkins.length);

  // ── settings, and progress restored from this app's own export (only into an account with none) ──
  if (plan.settings && Object.keys(plan.settings).length > 0) await updateProfile(c, userId, plan.settings);
  let progressRestored = 0;
  if (plan.progress && profile.coins === 0 && profile.streakMax === 0 && !(await hasAchievements(c, userId))) {
    const p = plan.progress;
    await updateProfile(c, userId, {
      coins: p.coins,
      totalTasksCreated: Math.max(p.totalTasksCreated, profile.totalTasksCreated + writing.length),
      streakCurrent: p.streakCurrent,
      streakMax: p.streakMax,
      streakLastDate: p.streakLastDate,
      streakShieldUsedMonth: p.streakShieldUsedMonth,
      questStreakCurrent: p.questStreakCurrent,
      questStreakMax: p.questStreakMax,
      questStreakLastDate: p.questStreakLastDate,
    });
    await insertAchievementRows(c, p.achievements.map((a) => ({ userId, achievementKey: a.key, coinsAwarded: a.coinsAwarded, unlockedAt: new Date(a.unlockedAt) })));
    progressRestored = 1;
  }

  const top = writing.filter((t) => !t.parentKey).length;
  const result: ApplyResult = {
    counts: [
      count('topics', topicRows.length, topicsAlready),
      count('tasks', top, plan.tasks.filter((t) => !t.parentKey).length - top),
      count('subtasks', writing.length - top, plan.tasks.filter((t) => t.parentKey).length - (writing.length - top)),
      count('completions', completions.length, plan.tasks.reduce((n, t) => n + t.completions.length, 0) - completions.length),
      count('wishlistItems', wishes.length, plan.wishlist.length - wishes.length),
      count('energyCheckins', checkins.length, plan.checkins.length - checkins.length),
      count('settings', plan.settings ? Object.keys(plan.settings).length : 0, 0),
      count('progress', progressRestored, plan.progress && !progressRestored ? 1 : 0),
    ],
    finishedAt: new Date().toISOString(),
  };
  await finishImport(c, importId, result, planSize(plan));
  return result;
}

/** A planned task as its row. */
function taskRow(
  t: PlannedTask,
  a: { id: string; userId: string; sortOrder: number; topicId: string | null; parentId: string | null; now: Date },
  opts: Pick<ApplyOptions, 'subtasks' | 'dueTime'>,
): TaskInsert {
  const r = t.rule;
  const row: TaskInsert & Record<string, unknown> = {
    id: a.id,
    userId: a.userId,
    topicId: a.topicId,
    title: t.title,
    notes: t.notes,
    type: t.type,
    priority: t.priority,
    recurrenceType: r?.type ?? null,
    recurrenceInterval: r ? r.interval : null,
    recurrenceWeekdays: r && (r.type === 'WEEKDAY' || r.type === 'NTH_WEEKDAY') ? [...r.weekdays].sort((x, y) => x - y) : null,
    recurrenceWeekOfMonth: r?.weekOfMonth ?? null,
    recurrenceFixed: r?.fixed ?? false,
    recurrenceAnchor: r ? t.anchor : null,
    dueDate: t.dueDate,
    reminders: t.reminders,
    nextDueDate: r ? t.nextDueDate : null,
    completedAt: t.type === 'RECURRING' || !t.completedAt ? null : new Date(t.completedAt),
    coinValue: t.coinValue,
    postponeCount: t.postponeCount,
    estimatedMinutes: t.estimatedMinutes,
    snoozedUntil: t.snoozedUntil,
    energyLevel: t.energyLevel,
    sortOrder: a.sortOrder,
    pausedAt: t.pausedAt ? new Date(t.pausedAt) : null,
    pausedUntil: t.pausedUntil,
    createdAt: t.createdAt ? new Date(t.createdAt) : a.now,
    updatedAt: a.now,
  };
  if (opts.subtasks) row.parentId = a.parentId;
  if (opts.dueTime) row.dueTime = t.dueDate ? t.dueTime : null;
  return row;
}
