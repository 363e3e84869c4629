import { collectRemindersRpc, gameApi, notificationRequested } from '@tasksvc/proto';
import { startOutboxRelay, type Bus, type Subscription } from '@tasksvc/runtime';
import type { Ctx } from '../handlers/common.ts';
import { collectReminders } from './collect.ts';
import * as energy from './energy.ts';
import * as h from './handlers.ts';
import * as vacation from './vacation.ts';
import * as wishlist from './wishlist.ts';
import { GAME_OUTBOX_SCHEMA } from './unlock.ts';

/**
 * Everything the game rules serve from inside the tasks service: the game HTTP routes, the
 * scheduler's reminder collection and the game's notification relay. Returned as subscriptions so
 * the tasks service stops them with its own.
 */
export function registerGame(bus: Bus, ctx: Ctx): Subscription[] {
  const { pool, log } = ctx;
  const relay = startOutboxRelay({ pool, bus, schema: GAME_OUTBOX_SCHEMA, events: [notificationRequested], log });
  relay.kick();
  return [
    bus.serve(collectRemindersRpc, (req) => collectReminders(pool, req)),
    bus.serve(gameApi.getQuest.rpc, (call) => h.getQuest(ctx, call)),
    bus.serve(gameApi.rerollQuest.rpc, (call) => h.rerollQuest(ctx, call)),
    bus.serve(gameApi.postponeQuest.rpc, (call) => h.postponeQuest(ctx, call)),
    bus.serve(gameApi.restoreQuest.rpc, (call) => h.restoreQuest(ctx, call)),
    bus.serve(gameApi.achievements.rpc, (call) => h.achievements(ctx, call)),
    bus.serve(gameApi.weeklyReview.rpc, (call) => h.weeklyReview(ctx, call)),
    bus.serve(gameApi.stats.rpc, (call) => h.stats(ctx, call)),
    bus.serve(gameApi.getQuestSettings.rpc, (call) => h.getQuestSettings(ctx, call)),
    bus.serve(gameApi.setQuestSettings.rpc, (call) => h.setQuestSettings(ctx, call)),
    bus.serve(gameApi.getNotificationSettings.rpc, (call) => h.getNotificationSettings(ctx, call)),
    bus.serve(gameApi.setNotificationSettings.rpc, (call) => h.setNotificationSettings(ctx, call)),
    bus.serve(gameApi.listWishlist.rpc, (call) => wishlist.listWishlist(ctx, call)),
    bus.serve(gameApi.createWishlistItem.rpc, (call) => wishlist.createWishlistItem(ctx, call)),
    bus.serve(gameApi.buyWishlistItem.rpc, (call) => wishlist.buyWishlistItem(ctx, call)),
    bus.serve(gameApi.discardWishlistItem.rpc, (call) => wishlist.discardWishlistItem(ctx, call)),
    bus.serve(gameApi.getEnergyCheckin.rpc, (call) => energy.getEnergyCheckin(ctx, call)),
    bus.serve(gameApi.energyCheckin.rpc, (call) => energy.energyCheckin(ctx, call)),
    bus.serve(gameApi.getVacationMode.rpc, (call) => vacation.getVacationMode(ctx, call)),
    bus.serve(gameApi.setVacationMode.rpc, (call) => vacation.setVacationMode(ctx, call)),
    { stop: () => relay.stop() },
  ];
}
