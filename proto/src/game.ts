import { z } from 'zod';
import { defineRpc } from './bus.ts';
import { defineRoute, type AnyRoute } from './http.ts';
import { notificationTag } from './notify.ts';
import { calendarDate, isoDate } from './task-fields.ts';
import { energyLevel, task } from './tasks.ts';

// ── Game HTTP API ───────────────────────────────────────────────────────────────────────────────

const TAG_GAME = 'Game';
const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time HH:MM (24 h)');

export const dailyQuestReply = z.object({
  /** the user's local date the quest belongs to */
  date: isoDate,
  /** null when no task qualifies */
  quest: task.nullable(),
  /** overdue | high-priority | recurring-due | random */
  tier: z.string().nullable(),
  completed: z.boolean(),
  postponesToday: z.number().int(),
  postponeLimit: z.number().int(),
});
export type DailyQuestReply = z.infer<typeof dailyQuestReply>;

export const achievementView = z.object({
  key: z.string(),
  /** a locked secret achievement shows neither title nor description */
  title: z.string(),
  description: z.string(),
  rarity: z.enum(['common', 'rare', 'epic', 'legendary']),
  category: z.string(),
  secret: z.boolean(),
  reward: z.number().int(),
  unlocked: z.boolean(),
  unlockedAt: z.string().nullable(),
});
export const achievementsReply = z.object({ achievements: z.array(achievementView), unlocked: z.number().int(), total: z.number().int() });

export const weeklyReviewReply = z.object({
  weekStart: isoDate,
  weekEnd: isoDate,
  completions: z.number().int(),
  previousWeekCompletions: z.number().int(),
  postponements: z.number().int(),
  coinsEarned: z.number().int(),
  streakCurrent: z.number().int(),
  streakMax: z.number().int(),
  tasksCreated: z.number().int(),
  topTopics: z.array(z.object({ topicId: z.uuid(), title: z.string(), completions: z.number().int() })),
});

const streakView = z.object({ current: z.number().int(), max: z.number().int(), lastDate: isoDate.nullable() });
export const statsReply = z.object({
  date: isoDate,
  /** the balance (what can be spent) */
  coins: z.number().int(),
  /** every coin earned over time; the level comes from it, so spending never lowers the level */
  coinsEarned: z.number().int(),
  level: z.number().int(),
  /** coins earned at which the level started, and at which the next one starts */
  levelStart: z.number().int(),
  nextLevelAt: z.number().int().nullable(),
  /** current is 0 once the streak can no longer be continued */
  streak: streakView.extend({ shieldAvailable: z.boolean() }),
  questStreak: streakView,
  tasksCompleted: z.number().int(),
  questsCompleted: z.number().int(),
  achievementsUnlocked: z.number().int(),
  /** completions per local day, the last 30 days, oldest first */
  completionsByDay: z.array(z.object({ date: isoDate, count: z.number().int() })),
});

export const questSettings = z.object({ postponeLimit: z.number().int().min(1).max(5), energyLevel: energyLevel.nullable() });
export const questSettingsBody = z.object({ postponeLimit: z.number().int().min(1).max(5).optional(), energyLevel: energyLevel.nullable().optional() }).strict();

const reminder = z.object({ enabled: z.boolean(), time: clock });
export const notificationSettings = z.object({
  /** the daily quest reminder */
  enabled: z.boolean(),
  time: clock,
  streakReminderTime: clock,
  weeklyReviewTime: clock,
  /** the streak reminder's and the weekly review's own switches (a release before them sends none: off, never a reminder nobody asked for) */
  streakReminderEnabled: z.boolean().default(false),
  weeklyReviewEnabled: z.boolean().default(false),
  dueToday: reminder,
  overdue: reminder,
  recurringDue: reminder,
  morningBriefing: reminder,
});
const reminderPatch = z.object({ enabled: z.boolean().optional(), time: clock.optional() }).strict();
export const notificationSettingsBody = z
  .object({
    enabled: z.boolean().optional(),
    time: clock.optional(),
    streakReminderTime: clock.optional(),
    weeklyReviewTime: clock.optional(),
    streakReminderEnabled: z.boolean().optional(),
    weeklyReviewEnabled: z.boolean().optional(),
    dueToday: reminderPatch.optional(),
    overdue: reminderPatch.optional(),
    recurringDue: reminderPatch.optional(),
    morningBriefing: reminderPatch.optional(),
  })
  .strict();

// Wishlist: things bought with coins (reference §6).
const wishlistStatus = z.enum(['OPEN', 'BOUGHT', 'DISCARDED']);
export const wishlistItem = z.object({
  id: z.uuid(),
  title: z.string(),
  price: z.number().int(),
  url: z.string().nullable(),
  status: wishlistStatus,
  createdAt: z.string(),
  /** when it was bought or discarded */
  closedAt: z.string().nullable(),
});
export type WishlistItem = z.infer<typeof wishlistItem>;
export const createWishlistItemBody = z
  .object({
    title: z.string().trim().min(1).max(200),
    price: z.number().int().min(0).max(1_000_000),
    url: z.url({ protocol: /^https?$/ }).max(2000).nullable().optional(),
  })
  .strict();
export type CreateWishlistItemBody = z.infer<typeof createWishlistItemBody>;
const wishlistReply = z.object({ items: z.array(wishlistItem), coins: z.number().int() });
const wishlistItemReply = z.object({ item: wishlistItem, coins: z.number().int() });
const idParam = z.object({ id: z.uuid() }).strict();

// Energy check-in: one per local day, the latest wins; it sets the energy the quest matches.
export const energyCheckinBody = z.object({ level: energyLevel }).strict();
const energyCheckin = z.object({ date: isoDate, level: energyLevel });
export const energyCheckinReply = z.object({
  today: energyCheckin.nullable(),
  /** consecutive days with a check-in, up to today (or yesterday while today has none yet) */
  streak: z.number().int(),
  /** the last 14 days' check-ins, newest first */
  recent: z.array(energyCheckin),
});

// Vacation mode: no reminders and no streak loss from its first day to its end date (inclusive).
export const vacationMode = z.object({ active: z.boolean(), startDate: isoDate.nullable(), endDate: isoDate.nullable() });
export const vacationModeBody = z.object({ active: z.boolean(), endDate: calendarDate.nullable().optional() }).strict();
export type VacationModeBody = z.infer<typeof vacationModeBody>;

export const gameApi = {
  getQuest: defineRoute({ method: 'GET', path: '/api/daily-quest', auth: 'user', subject: 'tasks.http.quest.get', response: dailyQuestReply, summary: "Today's quest, selected now if there is none yet", tag: TAG_GAME }),
  rerollQuest: defineRoute({ method: 'POST', path: '/api/daily-quest', auth: 'user', subject: 'tasks.http.quest.reroll', body: z.object({}).strict().optional(), response: dailyQuestReply, status: 200, summary: "Force a new selection of today's quest", tag: TAG_GAME }),
  postponeQuest: defineRoute({ method: 'POST', path: '/api/daily-quest/postpone', auth: 'user', subject: 'tasks.http.quest.postpone', body: z.object({}).strict().optional(), response: dailyQuestReply, status: 200, summary: "Postpone today's quest to tomorrow and select another (429 LIMIT_REACHED over the daily limit)", tag: TAG_GAME }),
  restoreQuest: defineRoute({ method: 'POST', path: '/api/daily-quest/restore', auth: 'user', subject: 'tasks.http.quest.restore', body: z.object({}).strict().optional(), response: dailyQuestReply, status: 200, summary: "Undo today's latest postponement: the task is due again and today's quest", tag: TAG_GAME }),
  achievements: defineRoute({ method: 'GET', path: '/api/achievements', auth: 'user', subject: 'tasks.http.achievements', response: achievementsReply, summary: 'All 31 achievements with what the user has unlocked', tag: TAG_GAME }),
  weeklyReview: defineRoute({ method: 'GET', path: '/api/review/weekly', auth: 'user', subject: 'tasks.http.review.weekly', query: z.object({ date: calendarDate.optional() }).strict(), response: weeklyReviewReply, summary: 'The Monday–Sunday week containing `date` (default today), in the user timezone', tag: TAG_GAME }),
  stats: defineRoute({ method: 'GET', path: '/api/stats', auth: 'user', subject: 'tasks.http.stats', response: statsReply, summary: 'Coins, level, streaks and completion counts', tag: TAG_GAME }),
  getQuestSettings: defineRoute({ method: 'GET', path: '/api/settings/quest', auth: 'user', subject: 'tasks.http.settings.quest.get', response: questSettings, summary: 'Daily postpone limit and current energy', tag: TAG_GAME }),
  setQuestSettings: defineRoute({ method: 'PUT', path: '/api/settings/quest', auth: 'user', subject: 'tasks.http.settings.quest.put', body: questSettingsBody, response: questSettings, summary: 'Set the daily postpone limit (1–5) and current energy', tag: TAG_GAME }),
  getNotificationSettings: defineRoute({ method: 'GET', path: '/api/settings/notifications', auth: 'user', subject: 'tasks.http.settings.notifications.get', response: notificationSettings, summary: 'Reminder switches and local times', tag: TAG_GAME }),
  listWishlist: defineRoute({ method: 'GET', path: '/api/wishlist', auth: 'user', subject: 'tasks.http.wishlist.list', response: wishlistReply, summary: 'Wishlist items (open first) and the coin balance', tag: TAG_GAME }),
  createWishlistItem: defineRoute({ method: 'POST', path: '/api/wishlist', auth: 'user', subject: 'tasks.http.wishlist.create', body: createWishlistItemBody, response: wishlistItemReply, summary: 'Add an item with a coin price', tag: TAG_GAME }),
  buyWishlistItem: defineRoute({ method: 'POST', path: '/api/wishlist/:id/buy', auth: 'user', subject: 'tasks.http.wishlist.buy', params: idParam, body: z.object({}).strict().optional(), response: wishlistItemReply, status: 200, summary: 'Buy an open item: spends its price (409 INSUFFICIENT_COINS when short)', tag: TAG_GAME }),
  discardWishlistItem: defineRoute({ method: 'POST', path: '/api/wishlist/:id/discard', auth: 'user', subject: 'tasks.http.wishlist.discard', params: idParam, body: z.object({}).strict().optional(), response: wishlistItemReply, status: 200, summary: 'Discard an open item (no coins spent)', tag: TAG_GAME }),
  getEnergyCheckin: defineRoute({ method: 'GET', path: '/api/energy-checkin', auth: 'user', subject: 'tasks.http.energy.get', response: energyCheckinReply, summary: "Today's energy check-in, the check-in streak and recent check-ins", tag: TAG_GAME }),
  energyCheckin: defineRoute({ method: 'POST', path: '/api/energy-checkin', auth: 'user', subject: 'tasks.http.energy.checkin', body: energyCheckinBody, response: energyCheckinReply, status: 200, summary: "Check in today's energy (one per day, the latest wins); the quest prefers matching tasks", tag: TAG_GAME }),
  getVacationMode: defineRoute({ method: 'GET', path: '/api/settings/vacation-mode', auth: 'user', subject: 'tasks.http.settings.vacation.get', response: vacationMode, summary: 'Vacation mode: active now, first and last day', tag: TAG_GAME }),
  setVacationMode: defineRoute({ method: 'PUT', path: '/api/settings/vacation-mode', auth: 'user', subject: 'tasks.http.settings.vacation.put', body: vacationModeBody, response: vacationMode, summary: 'Start vacation today (until endDate, or open-ended) or end it; no reminders and no streak loss meanwhile', tag: TAG_GAME }),
  setNotificationSettings: defineRoute({ method: 'PUT', path: '/api/settings/notifications', auth: 'user', subject: 'tasks.http.settings.notifications.put', body: notificationSettingsBody, response: notificationSettings, summary: 'Change reminder switches and local times (HH:MM in the user timezone)', tag: TAG_GAME }),
};

/** HTTP routes of the game rules (daily quest, streaks, achievements, review, stats). POST /api/cron is a gateway extension. */
export const gameRoutes: AnyRoute[] = Object.values(gameApi);

// ── Cron ────────────────────────────────────────────────────────────────────────────────────────

/** The cron jobs, in the order one run dispatches them (reference §9). */
export const CRON_JOBS = ['morning-briefing', 'overdue', 'due-today', 'recurring-due', 'daily-quest', 'streak-reminder', 'weekly-review'] as const;
export const cronJob = z.enum(CRON_JOBS);
export type CronJob = z.infer<typeof cronJob>;

/** Cron work is cut into 5-minute buckets aligned to UTC (every zone offset is a multiple of 5 minutes). */
export const CRON_BUCKET_MINUTES = 5;
export const CRON_BUCKET_MS = CRON_BUCKET_MINUTES * 60_000;
export function cronBucketStart(t: Date): Date {
  return new Date(Math.floor(t.getTime() / CRON_BUCKET_MS) * CRON_BUCKET_MS);
}

export const cronJobRun = z.object({
  job: z.string(),
  /** start of the 5-minute UTC bucket, ISO 8601 */
  bucket: z.string(),
  /** `ran`: this call did it; `skipped`: another call or replica has it (or had it) */
  status: z.enum(['ran', 'skipped', 'failed']),
  /** users due in this bucket (before per-user filters) */
  users: z.number().int(),
  /** notifications newly requested by this run */
  notifications: z.number().int(),
  error: z.string().optional(),
});
export type CronJobRun = z.infer<typeof cronJobRun>;

/** Reply of POST /api/cron (HTTP 200). */
export const cronRunSummary = z.object({
  ok: z.boolean(),
  ranAt: z.string(),
  buckets: z.array(z.string()),
  jobs: z.array(cronJobRun),
  durationMs: z.number(),
});
export type CronRunSummary = z.infer<typeof cronRunSummary>;

/** The gateway's POST /api/cron, once authorised, asks the scheduler to dispatch. */
export const cronRunRpc = defineRpc('scheduler.cron.run', z.object({}).strict(), cronRunSummary);

/** One notification the tasks service drafts for the scheduler to request (minus idempotency). */
export const reminderDraft = z.object({
  userId: z.uuid(),
  title: z.string().min(1).max(200),
  body: z.string().max(4000),
  url: z.string().nullable(),
  tag: notificationTag,
  dedupeKey: z.string().min(1).max(300),
});
export type ReminderDraft = z.infer<typeof reminderDraft>;

/**
 * Set-based collection: every user whose configured local time for `job` falls in the bucket,
 * in pages (at most `limit` users, and cut shorter when the drafts grow large) so a reply stays
 * far below the bus's message size limit. Pages follow the tasks service's due index (zone, local
 * time, user id); the cursor is opaque to the caller.
 */
export const collectRemindersRpc = defineRpc(
  'tasks.game.collectReminders',
  z
    .object({
      job: cronJob,
      bucketStart: z.iso.datetime(),
      /** `next` of the previous page; null for the first */
      after: z.string().min(1).max(300).nullable(),
      limit: z.number().int().min(1).max(5_000),
    })
    .strict(),
  z.object({
    /** users due in this bucket on this page (before per-user filters such as "nothing due") */
    users: z.number().int(),
    drafts: z.array(reminderDraft),
    /** pass as `after` for the next page; null when done */
    next: z.string().min(1).max(300).nullable(),
  }),
);

// ── Update check ────────────────────────────────────────────────────────────────────────────────

export const updateStatus = z.object({
  status: z.enum(['current', 'outdated', 'failed', 'disabled', 'unknown']),
  currentVersion: z.string(),
  latestVersion: z.string().nullable(),
  /** when the release listing was last asked (successfully or not) */
  checkedAt: z.string().nullable(),
  error: z.string().nullable(),
  /** why the check does not run when `disabled` (e.g. no release listing configured) */
  reason: z.string().nullable(),
});
export type UpdateStatus = z.infer<typeof updateStatus>;

/** For the admin page's banner. */
export const updateStatusRpc = defineRpc('scheduler.update.status', z.object({}).strict(), updateStatus);
