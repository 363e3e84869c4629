import { cronJobsRpc, cronRunRpc, cronStatusRpc, notificationRequested, TASK_EVENTS_FILTER, updateStatusRpc } from '@tasksvc/proto';
import { consumeUserDeletion, startOutboxRelay, updateCheckOffReason, userDeletionDurable, VERSION, type ServiceDefinition } from '@tasksvc/runtime';
import * as schema from './db/schema.ts';
import { dispatchCron } from './dispatch.ts';
import { cronMetrics } from './metrics.ts';
import { consumeReminderSchedules, listenForArmed, REMINDER_CONSUMER, startReminderTimer } from './reminders.ts';
import { cronJobs, cronStatus } from './status.ts';
import { readUpdateStatus, runUpdateCheck } from './update-check.ts';

/** How often each replica looks whether the shared update check is due (the check itself is daily). */
const UPDATE_POLL_MS = 3_600_000;
const UPDATE_FIRST_DELAY_MS = 15_000;

export interface SchedulerOptions {
  /** the dispatcher's clock; tests pass a crafted time */
  now?: () => Date;
  fetch?: typeof fetch;
  /** the reminder timer's longest sleep (tests shorten it) */
  reminderMaxSleepMs?: number;
}

/** Outbox rows per relay round (the runtime's default is 200). */
const RELAY_BATCH = 2_000;

export function createSchedulerService(opts: SchedulerOptions = {}): ServiceDefinition {
  const now = opts.now ?? (() => new Date());
  return {
    name: 'scheduler',
    migrations: { schema: 'scheduler', dir: new URL('../migrations', import.meta.url).pathname, outboxes: ['scheduler'] },
    durables: [{ durable: REMINDER_CONSUMER, filter: TASK_EVENTS_FILTER }, userDeletionDurable('scheduler')],
    async start({ bus, pool, log, config }) {
      // Large rounds: a dispatch enqueues thousands of rows at once, and each round's SELECT steps
      // over the entries of the rows published before it (until vacuum), so fewer, larger rounds.
      const relay = startOutboxRelay({ pool, bus, schema: 'scheduler', events: [notificationRequested], log, batch: RELAY_BATCH });
      // Off (with the reason for the admin panel) when turned off or when no release listing is known.
      const offReason = updateCheckOffReason(config);
      const updateOpts = { url: config.UPDATE_CHECK_URL ?? '', disabled: offReason !== null, currentVersion: VERSION, log, fetch: opts.fetch };
      const checkUpdates = () => void runUpdateCheck(pool, updateOpts);

      const subs = [
        bus.serve(cronStatusRpc, () => cronStatus(pool)),
        bus.serve(cronJobsRpc, async () => cronJobs(pool)),
        bus.serve(cronRunRpc, async () => {
          const summary = await dispatchCron({ pool, bus, log, relay }, now());
          // The update check rides along (it is due once a day at most); it never delays or fails the cron reply.
          checkUpdates();
          return summary;
        }),
        bus.serve(updateStatusRpc, async () => readUpdateStatus(pool, { disabled: offReason !== null, reason: offReason, currentVersion: VERSION })),
      ];

      // reminders at a time: the due-queue kept from task events, and the timer that fires it
      const reminderDeps = { pool, bus, log, relay };
      const timer = startReminderTimer(reminderDeps, { maxSleepMs: opts.reminderMaxSleepMs });
      subs.push(listenForArmed(bus, timer), await consumeReminderSchedules(reminderDeps));

      // a deleted account's reminders stop: what was sent and what is queued for them (tables derived from db/schema.ts)
      const deletion = await consumeUserDeletion({ bus, pool, log }, 'scheduler', schema, ['scheduler']);
      let poll: NodeJS.Timeout | undefined;
      let first: NodeJS.Timeout | undefined;
      if (offReason === null) {
        first = setTimeout(checkUpdates, UPDATE_FIRST_DELAY_MS);
        poll = setInterval(checkUpdates, UPDATE_POLL_MS);
        first.unref();
        poll.unref();
      }
      return {
        figures: async () => ({ cron: await cronMetrics.figures() }),
        async stop() {
          clearTimeout(first);
          clearInterval(poll);
          for (const s of subs) await s.stop();
          await timer.stop();
          await deletion.stop();
          await relay.stop();
        },
      };
    },
  };
}

export const schedulerService: ServiceDefinition = createSchedulerService();
