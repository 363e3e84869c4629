/**
 * Types of the HTTP contract, taken from proto (type-only: nothing of zod reaches the bundle). A
 * contract change that breaks a screen therefore fails the UI typecheck in `pnpm run build`.
 */
export type { Task, Topic, Profile, WebhookEndpoint, WebhookDelivery, NotificationChannel, NotificationChannelType, UpdateStatus } from '../../../proto/src/index.ts';
export type { AdminStats } from './types-pending.ts';

export type Priority = 'HIGH' | 'NORMAL' | 'SOMEDAY';
export type TaskType = 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
export const TASK_EVENTS = ['task.created', 'task.updated', 'task.completed', 'task.deleted'] as const;
