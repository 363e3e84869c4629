import { postponedDueDate } from '../../domain/task-schedule.ts';
import type { IsoDate } from './dates.ts';

export type TaskType = 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
export type Priority = 'HIGH' | 'NORMAL' | 'SOMEDAY';
export type Energy = 'HIGH' | 'MEDIUM' | 'LOW';

/** What quest selection needs to know about one of the user's tasks. */
export interface QuestCandidate {
  id: string;
  type: TaskType;
  priority: Priority;
  topicId: string | null;
  /** the task's topic is sequential (only its first open task may be worked on) */
  topicSequential: boolean;
  dueDate: IsoDate | null;
  nextDueDate: IsoDate | null;
  completed: boolean;
  snoozedUntil: IsoDate | null;
  pausedAt: string | null;
  pausedUntil: IsoDate | null;
  energyLevel: Energy | null;
  sortOrder: number;
  createdAt: string;
}

export type QuestTier = 'overdue' | 'high-priority' | 'recurring-due' | 'random';

export interface QuestPick {
  taskId: string;
  tier: QuestTier;
  /** false when the energy-matching pass found nothing and any energy was accepted */
  energyMatched: boolean;
}

const isSnoozed = (t: QuestCandidate, today: IsoDate) => t.snoozedUntil !== null && t.snoozedUntil > today;
const isPaused = (t: QuestCandidate, today: IsoDate) => t.pausedAt !== null && (t.pausedUntil === null || t.pausedUntil > today);

const byOrder = (a: QuestCandidate, b: QuestCandidate) => a.sortOrder - b.sortOrder || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id);

/**
 * Ids of tasks that are not the first open task of their sequential topic.
 * Snoozed and paused tasks do not hold the line (the reference: a snoozed task does not block the
 * ones after it), and recurring tasks never complete, so they take no place in a sequence.
 */
export function blockedTaskIds(tasks: readonly QuestCandidate[], today: IsoDate): Set<string> {
  const lines = new Map<string, QuestCandidate[]>();
  for (const t of tasks) {
    if (t.completed || t.type === 'RECURRING') continue;
    const keys: string[] = [];
    if (t.topicId && t.topicSequential) keys.push(`topic:${t.topicId}`);
    for (const k of keys) lines.set(k, [...(lines.get(k) ?? []), t]);
  }
  const blocked = new Set<string>();
  for (const line of lines.values()) {
    const ordered = line.filter((t) => !isSnoozed(t, today) && !isPaused(t, today)).sort(byOrder);
    for (const t of ordered.slice(1)) blocked.add(t.id);
  }
  return blocked;
}

export interface SelectOptions {
  today: IsoDate;
  /** the user's latest energy check-in; null tries every energy at once */
  energy: Energy | null;
  /** [0, 1): injected so tests are deterministic */
  random: () => number;
  /** tasks not to pick (e.g. the quest being re-rolled away from) */
  exclude?: ReadonlySet<string>;
}

/**
 * Pick today's quest (reference §3): the first tier with an eligible task wins; within a tier,
 * tasks matching the user's energy (or untagged) are tried before any energy.
 */
export function selectQuest(tasks: readonly QuestCandidate[], opts: SelectOptions): QuestPick | null {
  const { today } = opts;
  const blocked = blockedTaskIds(tasks, today);
  const open = tasks.filter((t) => {
    if (opts.exclude?.has(t.id) || isSnoozed(t, today) || isPaused(t, today) || blocked.has(t.id)) return false;
    return t.type === 'RECURRING' || !t.completed;
  });

  const tiers: { tier: QuestTier; pick: (ts: QuestCandidate[]) => QuestCandidate | undefined }[] = [
    {
      tier: 'overdue',
      pick: (ts) =>
        ts
          .filter((t) => t.type !== 'RECURRING' && t.dueDate !== null && t.dueDate < today)
          .sort((a, b) => a.dueDate!.localeCompare(b.dueDate!) || byOrder(a, b))[0],
    },
    {
      tier: 'high-priority',
      pick: (ts) =>
        ts
          .filter((t) => t.type !== 'RECURRING' && t.priority === 'HIGH' && t.topicId !== null)
          .sort((a, b) => (a.dueDate ?? '9999').localeCompare(b.dueDate ?? '9999') || byOrder(a, b))[0],
    },
    {
      tier: 'recurring-due',
      pick: (ts) =>
        ts
          .filter((t) => t.type === 'RECURRING' && t.nextDueDate !== null && t.nextDueDate <= today)
          .sort((a, b) => a.nextDueDate!.localeCompare(b.nextDueDate!) || byOrder(a, b))[0],
    },
    {
      tier: 'random',
      pick: (ts) => {
        const pool = ts.filter((t) => t.type === 'ONE_TIME' || t.type === 'DAILY_ELIGIBLE').sort(byOrder);
        return pool.length ? pool[Math.min(pool.length - 1, Math.floor(opts.random() * pool.length))] : undefined;
      },
    },
  ];

  const matching = opts.energy === null ? open : open.filter((t) => t.energyLevel === null || t.energyLevel === opts.energy);
  for (const { tier, pick } of tiers) {
    const m = pick(matching);
    if (m) return { taskId: m.id, tier, energyMatched: true };
    if (opts.energy !== null) {
      const any = pick(open);
      if (any) return { taskId: any.id, tier, energyMatched: false };
    }
  }
  return null;
}

/** Postpone limits (reference §4): a per-user daily limit from 1 to 5, default 3. */
export const POSTPONE_LIMIT_MIN = 1;
export const POSTPONE_LIMIT_MAX = 5;
export const POSTPONE_LIMIT_DEFAULT = 3;

export function canPostpone(postponedToday: number, limit: number): boolean {
  return postponedToday < limit;
}

/**
 * The dates after a postpone to `tomorrow`: snoozed until then, and the date that schedules the task
 * (the due date, or a recurring task's next due date) moved to tomorrow when it is earlier. A postpone
 * never brings a date forward and never gives an undated task a date.
 */
export function postponedDates(
  t: { type: TaskType; dueDate: IsoDate | null; nextDueDate: IsoDate | null },
  tomorrow: IsoDate,
): { snoozedUntil: IsoDate; dueDate: IsoDate | null; nextDueDate: IsoDate | null } {
  return t.type === 'RECURRING'
    ? { snoozedUntil: tomorrow, dueDate: t.dueDate, nextDueDate: postponedDueDate(t.nextDueDate, tomorrow) }
    : { snoozedUntil: tomorrow, dueDate: postponedDueDate(t.dueDate, tomorrow), nextDueDate: t.nextDueDate };
}
