/**
 * Types of the HTTP contract, taken from proto (type-only: nothing of zod reaches the bundle). A
 * contract change that breaks a screen therefore fails the UI typecheck in `pnpm run build`.
 */
import type { achievementsReply, completeTaskReply, energyCheckinReply, statsReply, vacationMode, weeklyReviewReply } from '../../../proto/src/index.ts';

export type { Task, Topic, Profile, AdminStats, AdminMetrics, AdminDeadLetters, AdminReplay, DailyQuestReply, WebhookEndpoint, WebhookDelivery, NotificationChannel, NotificationChannelType, UpdateStatus, WishlistItem } from '../../../proto/src/index.ts';

/** The parsed type of a zod schema, without importing zod into the UI. */
type Out<T> = T extends { _output: infer O } ? O : never;
export type StatsReply = Out<typeof statsReply>;
export type CompleteTaskReply = Out<typeof completeTaskReply>;
export type AchievementsReply = Out<typeof achievementsReply>;
export type AchievementView = AchievementsReply['achievements'][number];
export type WeeklyReviewReply = Out<typeof weeklyReviewReply>;
export type EnergyCheckinReply = Out<typeof energyCheckinReply>;
export type VacationMode = Out<typeof vacationMode>;

export type Priority = 'HIGH' | 'NORMAL' | 'SOMEDAY';
export type TaskType = 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
export const TASK_EVENTS = ['task.created', 'task.updated', 'task.completed', 'task.deleted'] as const;
