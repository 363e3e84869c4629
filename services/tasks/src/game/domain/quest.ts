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
  /** a subtask's parent (subtasks are never picked on their own: see questUnits) */
  parentId: string | null;
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
    // a topic's line is of its top-level tasks (a subtask goes with its parent)
    if (t.completed || t.type === 'RECURRING' || t.parentId) continue;
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
  /**
   * tasks re-rolled away earlier today: avoided while any other task qualifies, so repeated
   * re-rolls walk through the candidates instead of alternating between two of them
   */
  rerolledAway?: ReadonlySet<string>;
}

/** A task the quest may choose, and the task it then becomes: itself, or a parent's next subtask. */
interface QuestUnit extends QuestCandidate {
  questTaskId: string;
}

/**
 * What the quest chooses among (docs/tasks.md, "The daily quest"): the top-level tasks. A parent
 * with open subtasks is never picked itself: it stands for its **next subtask** (the first open one
 * in their order that is not snoozed or paused), which becomes the quest. It competes in the tiers
 * as the parent (its type, priority, topic) with the earliest due date among it and its open
 * subtasks, and with the next subtask's energy (or its own). A parent whose open subtasks are all
 * snoozed or paused has nothing to do today. Subtasks are never chosen on their own, so a task
 * split into ten is not ten tickets in the random tier.
 */
export function questUnits(tasks: readonly QuestCandidate[], today: IsoDate): QuestUnit[] {
  const steps = new Map<string, QuestCandidate[]>();
  for (const t of tasks) if (t.parentId && !t.completed) steps.set(t.parentId, [...(steps.get(t.parentId) ?? []), t]);
  const units: QuestUnit[] = [];
  for (const t of tasks) {
    if (t.parentId) continue;
    const open = (steps.get(t.id) ?? []).sort(byOrder);
    if (open.length === 0) {
      units.push({ ...t, questTaskId: t.id });
      continue;
    }
    const next = open.find((s) => !isSnoozed(s, today) && !isPaused(s, today));
    if (!next) continue;
    const dueDates = [t.dueDate, ...open.map((s) => s.dueDate)].filter((d): d is IsoDate => d !== null).sort();
    units.push({ ...t, dueDate: t.type === 'RECURRING' ? t.dueDate : (dueDates[0] ?? null), energyLevel: next.energyLevel ?? t.energyLevel, questTaskId: next.id });
  }
  return units;
}

/**
 * Pick today's quest (reference §3): the first tier with an eligible task wins; within a tier,
 * tasks matching the user's energy (or untagged) are tried before any energy. A parent with open
 * subtasks is picked as its next subtask (questUnits).
 */
export function selectQuest(tasks: readonly QuestCandidate[], opts: SelectOptions): QuestPick | null {
  const { rerolledAway, ...rest } = opts;
  if (rerolledAway?.size) {
    const fresh = selectQuest(tasks, { ...rest, exclude: new Set([...(opts.exclude ?? []), ...rerolledAway]) });
    if (fresh) return fresh;
  }
  return selectAmong(tasks, rest);
}

function selectAmong(tasks: readonly QuestCandidate[], opts: SelectOptions): QuestPick | null {
  const { today } = opts;
  const blocked = blockedTaskIds(tasks, today);
  const open = questUnits(tasks, today).filter((t) => {
    if (opts.exclude?.has(t.id) || opts.exclude?.has(t.questTaskId) || isSnoozed(t, today) || isPaused(t, today) || blocked.has(t.id)) return false;
    return t.type === 'RECURRING' || !t.completed;
  });

  const tiers: { tier: QuestTier; pick: (ts: QuestUnit[]) => QuestUnit | undefined }[] = [
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
    if (m) return { taskId: m.questTaskId, tier, energyMatched: true };
    if (opts.energy !== null) {
      const any = pick(open);
      if (any) return { taskId: any.questTaskId, tier, energyMatched: false };
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
