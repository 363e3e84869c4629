import { exportCompletionsPageRpc, exportIcsHeadRpc, exportIcsPageRpc, exportTasksPageRpc, exportTasksPartRpc } from '@tasksvc/proto';
import { jsonView, type Bus, type Subscription } from '@tasksvc/runtime';
import { ensureProfile } from '../db/profiles.ts';
import { caldavObjectsOf, completionPage, exportCounts, taskPage, topicTitles, userRecords } from '../db/user-data.ts';
import { ACHIEVEMENT_BY_KEY } from '../game/domain/achievements.ts';
import { levelForCoins } from '../game/domain/levels.ts';
import { notificationSettings } from '../game/handlers.ts';
import type { Ctx } from './common.ts';


/** The .ics export's mapper and ical.js, loaded with the first .ics export rather than at start (test/lazy-imports.test.ts). */
async function ical() {
  const [{ newCalendar, taskUid }, { taskToVtodo, tzidsOf, vtimezone }] = await Promise.all([import('../domain/icalendar.ts'), import('../domain/vtodo.ts')]);
  return { newCalendar, taskUid, taskToVtodo, tzidsOf, vtimezone };
}

/**
 * A page's reply stays under this many bytes of JSON (NATS carries at most 1 MiB per message by
 * default): rows are taken until the next would pass it, and the rest come with the next page.
 */
export const EXPORT_PAGE_BYTES = 256 * 1024;

/** The first `limit` rows whose text fits the byte budget (always at least one), and the cursor after the last taken. */
function fit<R>(rows: R[], cursors: string[], limit: number, size: (row: R) => number = (r) => JSON.stringify(r).length + 1): { taken: R[]; next: string | null } {
  let bytes = 0;
  let n = 0;
  while (n < rows.length) {
    bytes += size(rows[n]!);
    if (n > 0 && bytes > EXPORT_PAGE_BYTES) break;
    n++;
  }
  // a page cut short, or a full one, may have more after it; one with fewer rows than asked is the last
  const more = n < rows.length || rows.length === limit;
  return { taken: rows.slice(0, n), next: more && n > 0 ? cursors[n - 1]! : null };
}

/** The tasks service's part of the user's export: settings, game state, topics, and tasks and completions by pages. */
export function serveUserDataExport(bus: Bus, ctx: Ctx): Subscription[] {
  const { pool } = ctx;
  return [
    bus.serve(exportTasksPartRpc, async ({ userId }) => {
      const [p, r, counts] = await Promise.all([ensureProfile(pool, userId), userRecords(pool, userId), exportCounts(pool, userId)]);
      const iso = (d: Date | null) => (d ? d.toISOString() : null);
      return {
        settings: {
          timezone: p.timezone,
          postponeLimit: p.postponeLimit,
          energyLevel: p.energyLevel,
          reminders: notificationSettings(p),
          vacation: { startDate: p.vacationStartDate, endDate: p.vacationEndDate },
          calendarFeed: { active: p.calendarFeedCreatedAt !== null, createdAt: iso(p.calendarFeedCreatedAt) },
          createdAt: p.createdAt.toISOString(),
        },
        game: {
          coins: p.coins,
          level: levelForCoins(p.coins),
          totalTasksCreated: p.totalTasksCreated,
          streak: { current: p.streakCurrent, max: p.streakMax, lastDate: p.streakLastDate, shieldUsedMonth: p.streakShieldUsedMonth },
          questStreak: { current: p.questStreakCurrent, max: p.questStreakMax, lastDate: p.questStreakLastDate },
          achievements: r.achievements.map((a) => {
            const def = ACHIEVEMENT_BY_KEY.get(a.achievementKey);
            return { key: a.achievementKey, title: def?.title ?? a.achievementKey, description: def?.description ?? '', coinsAwarded: a.coinsAwarded, unlockedAt: a.unlockedAt.toISOString() };
          }),
          quests: r.quests.map((q) => ({ date: q.localDate, taskId: q.taskId, tier: q.tier, completedAt: iso(q.completedAt), createdAt: q.createdAt.toISOString() })),
          postponements: r.postponements.map((x) => ({
            taskId: x.taskId,
            date: x.localDate,
            via: x.via,
            previousDueDate: x.previousDueDate,
            previousSnoozedUntil: x.previousSnoozedUntil,
            restoredAt: iso(x.restoredAt),
            createdAt: x.createdAt.toISOString(),
          })),
          energyCheckins: r.checkins.map((e) => ({ date: e.localDate, level: e.level, createdAt: e.createdAt.toISOString() })),
          wishlist: r.wishlist.map((w) => jsonView(w)),
        },
        topics: r.topicRows.map((t) => jsonView(t)),
        taskCount: counts.tasks,
        completionCount: counts.completions,
      };
    }),
    bus.serve(exportTasksPageRpc, async ({ userId, after, limit }) => {
      const page = await taskPage(pool, userId, after, limit);
      const { taken, next } = fit(page.rows, page.cursors, limit);
      return { tasks: taken, next };
    }),
    bus.serve(exportIcsHeadRpc, async ({ userId }) => {
      const [p, counts] = await Promise.all([ensureProfile(pool, userId), exportCounts(pool, userId)]);
      const { newCalendar, vtimezone } = await ical();
      const cal = newCalendar({ 'x-wr-calname': 'Tasks' });
      const tz = vtimezone(p.timezone);
      if (tz) cal.addSubcomponent(tz);
      // the calendar's text less its closing line: the VTODOs follow, END:VCALENDAR comes last
      const text = `${cal.toString().replace(/END:VCALENDAR$/, '')}`;
      return { text, zone: p.timezone, taskCount: counts.tasks };
    }),
    bus.serve(exportIcsPageRpc, async ({ userId, after, limit, zonesWritten }) => {
      const [p, page, titles] = await Promise.all([ensureProfile(pool, userId), taskPage(pool, userId, after, limit), topicTitles(pool, userId)]);
      const { taskToVtodo, taskUid, tzidsOf, vtimezone } = await ical();
      // each task's VTODO through THE mapper (domain/vtodo.ts), as text, with the UID and properties a CalDAV client gave it
      const ids = page.rows.flatMap((t) => (t.parentId ? [t.id, t.parentId] : [t.id]));
      const objects = await caldavObjectsOf(pool, userId, [...new Set(ids)]);
      const uidOf = (id: string) => objects.get(id)?.uid ?? taskUid(id);
      const todos = page.rows.map((t) =>
        taskToVtodo(t, { timezone: p.timezone, topicTitle: t.topicId ? (titles.get(t.topicId) ?? null) : null, parentUid: t.parentId ? uidOf(t.parentId) : null, uid: uidOf(t.id), kept: objects.get(t.id)?.kept ?? null }),
      );
      const texts = todos.map((v) => `${v.toString()}\r\n`);
      const { taken, next } = fit(texts, page.cursors, limit, (t) => t.length);
      // a zone a VTODO names that no earlier page (nor the head) has written gets its VTIMEZONE here (RFC 5545 wants one per TZID, in any order)
      const seen = new Set(zonesWritten);
      const zones: string[] = [];
      for (const v of todos.slice(0, taken.length)) {
        for (const z of tzidsOf(v)) {
          if (seen.has(z)) continue;
          seen.add(z);
          const tz = vtimezone(z);
          if (tz) {
            zones.push(z);
            taken.push(`${tz.toString()}\r\n`);
          }
        }
      }
      return { text: taken.join(''), zones, next };
    }),
    bus.serve(exportCompletionsPageRpc, async ({ userId, after, limit }) => {
      const page = await completionPage(pool, userId, after, limit);
      const { taken, next } = fit(page.rows, page.cursors, limit);
      return { completions: taken, next };
    }),
  ];
}
