import { AppError, type RawResponse } from '@tasksvc/proto';
import { purposeRing, type Config, type Pool, type RingConfig } from '@tasksvc/runtime';
import { confirmEmailAddress } from '../db/store.ts';
import { confirmLink, readConfirmLink } from '../domain/confirm-links.ts';
import { emailMessage, escapeHtml } from '../domain/messages.ts';

/**
 * Confirming an e-mail channel's address (issue 56 #2): a save that sets an address not yet
 * confirmed mails it a signed single-use link, and nothing else goes there until the link is opened
 * (channels/email.ts `waiting`). Opening it answers a plain page.
 */

/**
 * The links' keys: the notifier's own subkeys for this purpose (runtime keyring.ts: from SECRETS_KEYRING,
 * its derived ring SECRETS_SUBKEYS, else the key derived from AUTH_SECRET), never AUTH_SECRET itself:
 * the operator gives the notifier no AUTH_SECRET. The first signs; every key still in the ring reads,
 * so rotating the ring leaves mailed links working.
 */
export function confirmKeys(config: RingConfig): Buffer[] {
  const ring = purposeRing(config, 'notifier/email-confirm-links');
  if (ring.length === 0) throw new AppError('SERVICE_UNAVAILABLE', 'e-mail addresses cannot be confirmed: the operator must set SECRETS_KEYRING');
  return ring.map((k) => k.key);
}

/** A new link for the user's e-mail channel: its nonce (to store in the row, replacing any earlier link) and the mail to send. */
export function confirmationMail(config: Config, userId: string, address: string, now: Date) {
  const { token, nonce } = confirmLink(confirmKeys(config)[0]!, userId, now);
  const notice = {
    title: 'Confirm your address for Task Service notifications',
    body: `Someone signed in to Task Service asked to get notifications at ${address}. If that was you, open the link below to confirm it. If not, ignore this mail: nothing more is sent here unless the link is opened.`,
    url: `/api/notification-channels/email/confirm/${token}`,
    tag: null,
  };
  return { nonce, message: emailMessage(config.SMTP_FROM!, address, notice, config.PUBLIC_APP_URL, { text: 'Confirm this address', html: 'Confirm this address' }) };
}

const page = (status: number, title: string, text: string): RawResponse => ({
  status,
  contentType: 'text/html; charset=utf-8',
  headers: { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
  body: `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head>\n<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p><p><a href="/settings">Notification settings</a></p></body></html>\n`,
});

/** What the link does: 200 confirmed, 403 not our link, 410 expired, 409 used or replaced. */
export async function confirmByLink(config: Config, pool: Pool, token: string, now: Date): Promise<RawResponse> {
  const check = readConfirmLink(confirmKeys(config), token, now);
  if (!check.ok) {
    return check.why === 'expired'
      ? page(410, 'This link has expired', 'Save the e-mail channel again in the notification settings to get a new link.')
      : page(403, 'This is not a valid confirmation link', 'Open the link exactly as it was mailed to you.');
  }
  const address = await confirmEmailAddress(pool, check.claims.userId, check.claims.nonce);
  if (!address) return page(409, 'This link no longer works', 'It was used already, or a newer link was sent (the address was changed or saved again). Check the notification settings.');
  return page(200, 'Address confirmed', `Task Service will send notifications to ${address}.`);
}
