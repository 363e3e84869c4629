import type { UserExport } from '@tasksvc/proto';

/**
 * Where each table that holds a user's id goes in the export (and how many entries its rows become),
 * or why it is left out. tools/user-data/account.test.ts fails for a table of the derived list
 * (tables.ts) that is in neither, and docs/moving.md must name every exclusion.
 */
export type Coverage = { exported: string; entries: (doc: UserExport) => number } | { excluded: string };

export const EXPORT_COVERAGE: Record<string, Coverage> = {
  'auth.users': { exported: 'account', entries: () => 1 },
  'auth.accounts': { exported: 'account.linkedAccounts', entries: (d) => d.account.linkedAccounts.length },
  'auth.sessions': { exported: 'account.sessions', entries: (d) => d.account.sessions.length },
  'auth.api_keys': { exported: 'account.apiKeys', entries: (d) => d.account.apiKeys.length },
  'auth.totp_credentials': { exported: 'account.security.totpEnabled', entries: (d) => (d.account.security.totpEnabled ? 1 : 0) },
  'auth.totp_backup_codes': { exported: 'account.security.backupCodesRemaining', entries: (d) => d.account.security.backupCodesRemaining },
  'auth.authenticators': { exported: 'account.security.passkeys', entries: (d) => d.account.security.passkeys.length },
  'auth.webauthn_challenges': { excluded: 'a passkey ceremony in progress; expires within minutes' },
  'auth.second_factor_attempts': { excluded: 'the counter of wrong second-factor codes (a rate limit)' },
  'tasks.profiles': { exported: 'settings and game', entries: () => 1 },
  'tasks.topics': { exported: 'topics', entries: (d) => d.topics.length },
  'tasks.tasks': { exported: 'tasks', entries: (d) => d.tasks.length },
  'tasks.task_completions': { exported: 'completions', entries: (d) => d.completions.length },
  'tasks.daily_quests': { exported: 'game.quests', entries: (d) => d.game.quests.length },
  'tasks.quest_postponements': { exported: 'game.postponements', entries: (d) => d.game.postponements.length },
  'tasks.user_achievements': { exported: 'game.achievements', entries: (d) => d.game.achievements.length },
  'tasks.wishlist_items': { exported: 'game.wishlist', entries: (d) => d.game.wishlist.length },
  'tasks.energy_checkins': { exported: 'game.energyCheckins', entries: (d) => d.game.energyCheckins.length },
  'tasks.reminder_action_uses': { excluded: 'spent one-time links of reminder notifications (Done / Snooze 1 h), pruned once the links have expired' },
  'tasks.caldav_objects': { excluded: "a CalDAV client's own file name, UID and extra properties of a task (the .ics export writes them into the task's VTODO)" },
  'tasks.caldav_tombstones': { excluded: 'CalDAV sync records of deleted tasks, so a syncing client learns of the deletion; pruned after their retention' },
  'tasks.imports': { excluded: 'import jobs: the preview and progress of an upload (the tasks it brought are exported)' },
  'tasks.import_chunks': { excluded: 'the uploaded file of an import while it awaits confirmation' },
  'tasks.import_sources': { excluded: 'which item of an imported file each task came from, so the same file imported again adds nothing; meaningful on this installation only' },
  'notifier.channels': { exported: 'notifications.channels', entries: (d) => d.notifications.channels.length },
  'notifier.push_subscriptions': { exported: 'notifications.pushDevices', entries: (d) => d.notifications.pushDevices.length },
  'notifier.deliveries': { exported: 'notifications.log', entries: (d) => d.notifications.log.length },
  'webhook.endpoints': { exported: 'webhooks', entries: (d) => d.webhooks.length },
  'webhook.events': { excluded: 'copies of task events kept for their webhook deliveries (the tasks themselves are exported)' },
  'webhook.deliveries': { excluded: 'delivery attempts of task events to the webhook endpoints (each endpoint is exported)' },
  'scheduler.cron_sent': { excluded: 'which reminder went out when (the keys that keep a reminder from going out twice)' },
  'scheduler.reminder_queue': { excluded: 'reminders of tasks queued to fire, and which fired (the reminders are exported with their tasks)' },
  'gateway.idempotency_keys': { excluded: 'replies to requests sent with an Idempotency-Key, kept a day so a retried request gets the same answer' },
  'gateway.rate_limits': { excluded: 'request counters of the rate limits' },
};
