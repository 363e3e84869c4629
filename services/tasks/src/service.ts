import { davRpc, taskEvents, tasksApi } from '@tasksvc/proto';
import { consumeUserDeletion, startOutboxRelay, userDeletionDurable, type ServiceDefinition, type Subscription } from '@tasksvc/runtime';
import * as schema from './db/schema.ts';
import type { Ctx } from './handlers/common.ts';
import { CreateBatcher } from './db/create-batcher.ts';
import { ZoneCache } from './zone-cache.ts';
import * as settings from './handlers/settings.ts';
import * as tasks from './handlers/tasks.ts';
import * as topics from './handlers/topics.ts';
import { CALDAV_TOMBSTONE_DAYS, purgeTombstones } from './db/caldav.ts';
import { registerReminders } from './handlers/reminders.ts';
import * as completion from './handlers/completion.ts';
import * as subtasks from './handlers/subtasks.ts';
import { registerGame } from './game/index.ts';
import { GAME_OUTBOX_SCHEMA } from './game/unlock.ts';
import { serveTasksAdminStats } from './admin-stats.ts';
import { registerImport } from './import/index.ts';
import { serveUserDataExport } from './handlers/user-data.ts';

export const tasksService: ServiceDefinition = {
  name: 'tasks',
  migrations: { schema: 'tasks', dir: new URL('../migrations', import.meta.url).pathname, outboxes: ['tasks', GAME_OUTBOX_SCHEMA] },
  durables: [userDeletionDurable('tasks')],
  async start({ bus, pool, log, config }) {
    const relay = startOutboxRelay({ pool, bus, schema: 'tasks', events: Object.values(taskEvents), log });
    const ctx: Ctx = { pool, relay, config, log, zones: new ZoneCache(), creates: new CreateBatcher(pool) };
    const api = tasksApi;
    // Each route's contract is served by exactly one handler.
    const subs: Subscription[] = [
      bus.serve(api.list.rpc, (call) => tasks.list(ctx, call)),
      bus.serve(api.create.rpc, (call) => tasks.create(ctx, call)),
      bus.serve(api.bulk.rpc, (call) => tasks.bulk(ctx, call)),
      bus.serve(api.bulkPost.rpc, (call) => tasks.bulk(ctx, call)),
      bus.serve(api.get.rpc, (call) => tasks.get(ctx, call)),
      bus.serve(api.update.rpc, (call) => tasks.update(ctx, call)),
      bus.serve(api.remove.rpc, (call) => tasks.remove(ctx, call)),
      bus.serve(api.complete.rpc, (call) => completion.complete(ctx, call)),
      bus.serve(api.undoComplete.rpc, (call) => completion.undoComplete(ctx, call)),
      bus.serve(api.listSubtasks.rpc, (call) => subtasks.list(ctx, call)),
      bus.serve(api.createSubtask.rpc, (call) => subtasks.add(ctx, call)),
      bus.serve(api.reorderSubtasks.rpc, (call) => subtasks.reorder(ctx, call)),
      bus.serve(api.breakdown.rpc, (call) => subtasks.breakdown(ctx, call)),
      bus.serve(api.promote.rpc, (call) => subtasks.promote(ctx, call)),
      bus.serve(api.undoPromote.rpc, (call) => subtasks.undoPromote(ctx, call)),
      bus.serve(api.snooze.rpc, (call) => tasks.snooze(ctx, call)),
      bus.serve(api.unsnooze.rpc, (call) => tasks.unsnooze(ctx, call)),
      bus.serve(api.postpone.rpc, (call) => tasks.postpone(ctx, call)),
      bus.serve(api.pause.rpc, (call) => tasks.pause(ctx, call)),
      bus.serve(api.resume.rpc, (call) => tasks.resume(ctx, call)),
      bus.serve(api.listTopics.rpc, (call) => topics.list(ctx, call)),
      bus.serve(api.createTopic.rpc, (call) => topics.create(ctx, call)),
      bus.serve(api.reorderTopics.rpc, (call) => topics.reorder(ctx, call)),
      bus.serve(api.reorderTopicsPost.rpc, (call) => topics.reorder(ctx, call)),
      bus.serve(api.getTopic.rpc, (call) => topics.get(ctx, call)),
      bus.serve(api.updateTopic.rpc, (call) => topics.update(ctx, call)),
      bus.serve(api.deleteTopic.rpc, (call) => topics.remove(ctx, call)),
      bus.serve(api.reorderTopicTasks.rpc, (call) => topics.reorderTasks(ctx, call)),
      bus.serve(api.getTimezone.rpc, (call) => settings.getTimezone(ctx, call)),
      bus.serve(api.setTimezone.rpc, (call) => settings.putTimezone(ctx, call)),
      bus.serve(api.setTimezonePut.rpc, (call) => settings.putTimezone(ctx, call)),
      bus.serve(api.getProfile.rpc, (call) => settings.getProfile(ctx, call)),
      bus.serve(api.getTaskSettings.rpc, (call) => settings.getTaskSettings(ctx, call)),
      bus.serve(api.setTaskSettings.rpc, (call) => settings.putTaskSettings(ctx, call)),
      bus.serve(api.feedStatus.rpc, (call) => settings.feedStatus(ctx, call)),
      bus.serve(api.feedRotate.rpc, (call) => settings.feedRotate(ctx, call)),
      bus.serve(api.feedRevoke.rpc, (call) => settings.feedRevoke(ctx, call)),
      bus.serve(api.feed.rpc, (call) => settings.feed(ctx, call)),
      // CalDAV's XML and iCalendar libraries (xmldom, ical.js) load with its first request, not at start (test/lazy-imports.test.ts)
      bus.serve(davRpc, async (req) => (await import('./handlers/caldav.ts')).handleDav(ctx, req)),
      ...registerGame(bus, ctx),
      ...registerReminders(bus, ctx),
      serveTasksAdminStats(bus, pool),
      registerImport(bus, ctx),
      ...serveUserDataExport(bus, ctx),
    ];
    // an account deleted in the auth service: its rows here go too (tables derived from db/schema.ts)
    subs.push(await consumeUserDeletion({ bus, pool, log }, 'tasks', schema, ['tasks', GAME_OUTBOX_SCHEMA]));
    // Events committed before a crash are still pending: publish them now rather than at the first poll.
    relay.kick();
    // CalDAV tombstones past their retention go hourly (any replica may do it; the delete is idempotent)
    const purge = setInterval(() => void purgeTombstones(pool, CALDAV_TOMBSTONE_DAYS).catch((err: unknown) => log.warn({ err }, 'tombstone purge failed')), 3_600_000);
    purge.unref();
    return {
      async stop() {
        clearInterval(purge);
        for (const s of subs) await s.stop();
        await relay.stop();
      },
    };
  },
};
