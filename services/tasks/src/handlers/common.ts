import { AppError, taskEvents, type HttpCall, type Identity, type Profile, type Task, type TaskEventName, type Topic } from '@tasksvc/proto';
import { inTransaction, outboxRow, type Config, type Logger, type OutboxRelay, type Pool, type PoolClient } from '@tasksvc/runtime';
import type { RecurrenceRule } from '@tasksvc/proto/calendar/recurrence.ts';
import type { ProfileRow } from '../db/profiles.ts';
import type { TaskRow } from '../db/tasks.ts';
import type { TopicRow } from '../db/topics.ts';
import type { ZoneCache } from '../zone-cache.ts';

export const SCHEMA = 'tasks';

export interface Ctx {
  pool: Pool;
  relay: OutboxRelay;
  config: Config;
  log: Logger;
  zones: ZoneCache;
}

/** Run a change in one transaction, then nudge the outbox relay so its events leave right away. */
export async function transact<T>(ctx: Ctx, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const result = await inTransaction(ctx.pool, fn);
  ctx.relay.kick();
  return result;
}

/** The gateway only forwards `auth: 'user'` routes with a user; a call without one is refused anyway. */
export function userOf(call: HttpCall<unknown, unknown, unknown>): Identity {
  if (!call.user) throw new AppError('UNAUTHENTICATED', 'sign in first');
  return call.user;
}

export const taskNotFound = () => new AppError('TASKS_NOT_FOUND', 'task not found');
export const topicNotFound = () => new AppError('TOPICS_NOT_FOUND', 'topic not found');

/** A 400 naming one body field, in the same shape the gateway's schema validation uses. */
export function fieldError(field: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', 'invalid body', [{ path: `body.${field}`, message }]);
}

export function ruleOf(row: Pick<TaskRow, 'recurrence_type' | 'recurrence_interval' | 'recurrence_weekdays' | 'recurrence_week_of_month' | 'recurrence_fixed'>): RecurrenceRule | null {
  if (!row.recurrence_type) return null;
  return {
    type: row.recurrence_type,
    interval: row.recurrence_interval ?? 1,
    weekdays: row.recurrence_weekdays ?? [],
    weekOfMonth: row.recurrence_week_of_month,
    fixed: row.recurrence_fixed,
  };
}

export function toTask(r: TaskRow): Task {
  return {
    id: r.id,
    userId: r.user_id,
    topicId: r.topic_id,
    title: r.title,
    notes: r.notes,
    type: r.type,
    priority: r.priority,
    recurrenceType: r.recurrence_type,
    recurrenceInterval: r.recurrence_interval,
    recurrenceWeekdays: r.recurrence_weekdays,
    recurrenceWeekOfMonth: r.recurrence_week_of_month,
    recurrenceFixed: r.recurrence_fixed,
    dueDate: r.due_date,
    nextDueDate: r.next_due_date,
    completedAt: r.completed_at?.toISOString() ?? null,
    snoozedUntil: r.snoozed_until,
    pausedAt: r.paused_at?.toISOString() ?? null,
    pausedUntil: r.paused_until,
    postponeCount: r.postpone_count,
    estimatedMinutes: r.estimated_minutes,
    energyLevel: r.energy_level,
    sortOrder: r.sort_order,
    coinValue: r.coin_value,
    isDailyQuest: r.is_daily_quest,
    dailyQuestDate: r.daily_quest_date,
    blocked: r.blocked,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export function toTopic(r: TopicRow): Topic {
  return {
    id: r.id,
    userId: r.user_id,
    title: r.title,
    description: r.description,
    color: r.color,
    icon: r.icon,
    priority: r.priority,
    archived: r.archived,
    sequential: r.sequential,
    defaultEnergyLevel: r.default_energy_level,
    sortOrder: r.sort_order,
    taskCount: Number(r.task_count),
    openTaskCount: Number(r.open_task_count),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export function toProfile(r: ProfileRow): Profile {
  return {
    userId: r.user_id,
    timezone: r.timezone,
    coins: r.coins,
    totalTasksCreated: r.total_tasks_created,
    vacationEndDate: r.vacation_end_date,
    postponeLimit: r.postpone_limit,
    notificationEnabled: r.notification_enabled,
    notificationTime: r.notification_time,
    dueTodayReminderEnabled: r.due_today_reminder_enabled,
    dueTodayReminderTime: r.due_today_reminder_time,
    recurringDueReminderEnabled: r.recurring_due_reminder_enabled,
    recurringDueReminderTime: r.recurring_due_reminder_time,
    overdueReminderEnabled: r.overdue_reminder_enabled,
    overdueReminderTime: r.overdue_reminder_time,
    morningBriefingEnabled: r.morning_briefing_enabled,
    morningBriefingTime: r.morning_briefing_time,
    weeklyReviewTime: r.weekly_review_time,
    createdAt: r.created_at.toISOString(),
  };
}

/** The date a task is due on: the next occurrence for RECURRING tasks, else its due date. */
export const effectiveDueDate = (r: Pick<TaskRow, 'type' | 'due_date' | 'next_due_date'>) => (r.type === 'RECURRING' ? r.next_due_date : r.due_date);

type EventRow = Pick<TaskRow, 'id' | 'user_id' | 'title' | 'type' | 'priority' | 'topic_id' | 'due_date' | 'next_due_date' | 'created_at'>;

/** A task event's outbox row. The payload is exactly the spec's; completedAt is set only on task.completed. */
export function taskEventRow(name: TaskEventName, row: EventRow, opts: { completedAt?: Date; dueDate?: string | null } = {}) {
  return outboxRow(taskEvents[name], {
    userId: row.user_id,
    payload: {
      event: name,
      timestamp: new Date().toISOString(),
      task: {
        id: row.id,
        title: row.title,
        type: row.type,
        priority: row.priority,
        topicId: row.topic_id,
        dueDate: opts.dueDate !== undefined ? opts.dueDate : effectiveDueDate(row),
        completedAt: name === 'task.completed' ? (opts.completedAt ?? new Date()).toISOString() : null,
        createdAt: row.created_at.toISOString(),
      },
    },
  });
}

/** Write a task event into the outbox on the transaction's client: it is published if and only if the change commits. */
export async function emitTaskEvent(c: PoolClient, name: TaskEventName, row: EventRow, opts: { completedAt?: Date; dueDate?: string | null } = {}): Promise<void> {
  const e = taskEventRow(name, row, opts);
  await c.query(`INSERT INTO ${SCHEMA}.outbox (id, subject, payload, traceparent) VALUES ($1, $2, $3, $4)`, [e.id, e.subject, e.payload, e.traceparent]);
}
