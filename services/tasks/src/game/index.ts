import { collectRemindersRpc, notificationRequested } from '@tasksvc/proto';
import { startOutboxRelay, type Bus, type Logger, type Pool, type Subscription } from '@tasksvc/runtime';
import { collectReminders } from './collect.ts';
import { GAME_OUTBOX_SCHEMA } from './unlock.ts';

/**
 * Everything the game rules serve from inside the tasks service: the scheduler's reminder
 * collection and the game's notification relay. Returned as subscriptions so the tasks service
 * stops them with its own.
 */
export function registerGame(deps: { bus: Bus; pool: Pool; log: Logger }): Subscription[] {
  const { bus, pool, log } = deps;
  const relay = startOutboxRelay({ pool, bus, schema: GAME_OUTBOX_SCHEMA, events: [notificationRequested], log });
  relay.kick();
  return [
    bus.serve(collectRemindersRpc, async (req) => {
      const reply = await collectReminders(pool, req);
      return reply;
    }),
    { stop: () => relay.stop() },
  ];
}
