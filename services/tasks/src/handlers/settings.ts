import { AppError, CALENDAR_TOKEN_PREFIX, type HttpCall, type RawResponse } from '@tasksvc/proto';
import { randomToken, sha256Hex } from '@tasksvc/runtime';
import { isValidTimeZone, localDate } from '@tasksvc/proto/calendar/dates.ts';
import type { FeedTask } from '../domain/ical.ts';
import { ensureProfile, profileByFeedHash, setFeedTokenHash, setTimezone, updateProfile } from '../db/profiles.ts';
import { feedTasks, tasksWithReminders } from '../db/tasks.ts';
import { effectiveDueDate, emitTaskEvent, fieldError, ruleOf, toProfile, transact, userOf, type Ctx } from './common.ts';

/** A feed lists at most this many events (a calendar client re-fetches it regularly). */
const FEED_LIMIT = 5000;

export async function getTimezone(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  const profile = await ensureProfile(ctx.pool, userOf(call).id);
  return { timezone: profile.timezone };
}

export async function putTimezone(ctx: Ctx, call: HttpCall<unknown, unknown, { timezone: string }>) {
  const tz = call.body.timezone;
  if (!isValidTimeZone(tz)) throw fieldError('timezone', 'must be an IANA timezone such as Europe/Berlin');
  const userId = userOf(call).id;
  // A reminder before a due time, or at a date's 09:00, fires at another instant in another zone:
  // each such task's schedule goes to the scheduler again (a task.updated, as the task's due moment moved).
  await transact(ctx, async (c) => {
    await setTimezone(c, userId, tz);
    for (const row of await tasksWithReminders(c, userId, localDate(new Date(), tz))) await emitTaskEvent(c, 'task.updated', row, { zone: tz });
  });
  ctx.zones.set(userId, tz); // this replica's next create need not find out by a retry
  return { success: true as const, timezone: tz };
}

export async function getTaskSettings(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  const p = await ensureProfile(ctx.pool, userOf(call).id);
  return { autoCompleteParent: p.autoCompleteParent };
}

export async function putTaskSettings(ctx: Ctx, call: HttpCall<unknown, unknown, { autoCompleteParent?: boolean }>) {
  const userId = userOf(call).id;
  await ensureProfile(ctx.pool, userId);
  if (call.body.autoCompleteParent !== undefined) await updateProfile(ctx.pool, userId, { autoCompleteParent: call.body.autoCompleteParent });
  return getTaskSettings(ctx, call);
}

export async function getProfile(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  return { profile: toProfile(await ensureProfile(ctx.pool, userOf(call).id)) };
}

export async function feedStatus(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  const p = await ensureProfile(ctx.pool, userOf(call).id);
  return { active: p.calendarFeedCreatedAt !== null, createdAt: p.calendarFeedCreatedAt?.toISOString() ?? null };
}

/**
 * Create or rotate the feed token. Only its SHA-256 is stored, so the URL is shown this once; a
 * rotation makes the previous URL stop working at once. The URL is built from PUBLIC_APP_URL at
 * run time (the spec lists the iCal feed among the surfaces that follow a run-time value).
 */
export async function feedRotate(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  const token = randomToken(CALENDAR_TOKEN_PREFIX);
  const createdAt = await setFeedTokenHash(ctx.pool, userOf(call).id, sha256Hex(token));
  return { url: `${ctx.config.PUBLIC_APP_URL}/api/calendar/${token}.ics`, createdAt: (createdAt ?? new Date()).toISOString() };
}

export async function feedRevoke(ctx: Ctx, call: HttpCall<unknown, unknown, unknown>) {
  await setFeedTokenHash(ctx.pool, userOf(call).id, null);
  return { success: true as const };
}

/** GET /api/calendar/<token>.ics: the token is the only credential; unknown tokens are 404. */
export async function feed(ctx: Ctx, call: HttpCall<{ file: string }, unknown, unknown>): Promise<RawResponse> {
  const token = call.params.file.slice(0, -'.ics'.length);
  const owner = await profileByFeedHash(ctx.pool, sha256Hex(token));
  if (!owner) throw new AppError('NOT_FOUND', 'unknown calendar feed');
  const rows = await feedTasks(ctx.pool, owner.userId, FEED_LIMIT);
  const tasks: FeedTask[] = rows.map((r) => {
    const rule = ruleOf(r);
    return {
      id: r.id,
      title: r.title,
      notes: r.notes,
      priority: r.priority,
      date: effectiveDueDate(r)!,
      recurrence: r.type === 'RECURRING' && rule && r.recurrenceAnchor ? { rule, anchor: r.recurrenceAnchor } : null,
      parentId: r.parentId,
      updatedAt: r.updatedAt,
    };
  });
  return {
    status: 200,
    contentType: 'text/calendar; charset=utf-8',
    headers: { 'cache-control': 'private, max-age=300', 'content-disposition': 'inline; filename="tasks.ics"' },
    // ical.js loads with the first feed read, not at start (test/lazy-imports.test.ts)
    body: (await import('../domain/ical.ts')).buildCalendar(tasks, { now: new Date(), name: 'Tasks' }),
  };
}
