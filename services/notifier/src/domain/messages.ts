import type { HttpAlertPayload, NotificationAction } from '@tasksvc/proto';

/**
 * Pure message building for the six channels, and how an answer is judged. No I/O here: the
 * senders in ../channels take these requests and put them on the wire.
 */

/** What every channel renders. */
export interface Notice {
  title: string;
  body: string;
  /** relative application path, e.g. `/tasks` */
  url: string | null;
  tag: string | null;
  /** buttons (a reminder's Done / Snooze 1 h), for the channels that show them */
  actions?: NotificationAction[] | undefined;
}

export interface HttpMessage {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string | Buffer;
}

/** The absolute link for a relative application path (anything else is dropped). */
export function appLink(appUrl: string, path: string | null): string | null {
  if (!path || !path.startsWith('/') || path.startsWith('//')) return null;
  return `${appUrl.replace(/\/+$/, '')}${path}`;
}

/** The spec's HTTP Alert body, exactly these six fields in this order. */
export function httpAlertBody(n: Notice, now: Date): string {
  const payload: HttpAlertPayload = { event: 'service.notification', title: n.title, body: n.body, url: n.url, tag: n.tag, timestamp: now.toISOString() };
  return JSON.stringify(payload);
}

/** ntfy JSON publishing: POST the JSON to the server root (emoji-safe, unlike headers). */
export function ntfyMessage(cfg: { server: string; topic: string; priority: number | null; token: string | null }, n: Notice, appUrl: string): HttpMessage {
  const link = appLink(appUrl, n.url);
  const body: Record<string, unknown> = { topic: cfg.topic, title: n.title, message: n.body || n.title };
  if (n.tag) body.tags = [n.tag];
  if (cfg.priority) body.priority = cfg.priority;
  if (link) body.click = link;
  // ntfy's "http" action: the ntfy app sends the request itself when the button is tapped
  const actions = (n.actions ?? []).flatMap((a) => {
    const url = appLink(appUrl, a.url);
    return url ? [{ action: 'http', label: a.label, url, method: 'POST', clear: true }] : [];
  });
  if (actions.length > 0) body.actions = actions;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cfg.token) headers.authorization = `Bearer ${cfg.token}`;
  return { url: `${cfg.server.replace(/\/+$/, '')}/`, method: 'POST', headers, body: JSON.stringify(body) };
}

/** Pushover Message API: form-encoded POST to /1/messages.json. */
export function pushoverMessage(
  apiBase: string,
  cfg: { appToken: string; userKey: string; device: string | null; priority: number | null },
  n: Notice,
  appUrl: string,
): HttpMessage {
  const form = new URLSearchParams({ token: cfg.appToken, user: cfg.userKey, title: n.title, message: n.body || n.title });
  const link = appLink(appUrl, n.url);
  if (link) {
    form.set('url', link);
    form.set('url_title', 'Open Task Service');
  }
  if (cfg.device) form.set('device', cfg.device);
  if (cfg.priority !== null) form.set('priority', String(cfg.priority));
  return { url: `${apiBase.replace(/\/+$/, '')}/1/messages.json`, method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() };
}

/** Telegram Bot API sendMessage, plain text (no parse mode, so nothing needs escaping). */
export function telegramMessage(apiBase: string, cfg: { botToken: string; chatId: string }, n: Notice, appUrl: string): HttpMessage {
  const link = appLink(appUrl, n.url);
  const text = [n.title, n.body, link].filter(Boolean).join('\n\n');
  return {
    url: `${apiBase.replace(/\/+$/, '')}/bot${cfg.botToken}/sendMessage`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chat_id: cfg.chatId, text, disable_web_page_preview: true }),
  };
}

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** `label`: what the link is called (a confirmation link says what it does). */
export function emailMessage(from: string, to: string, n: Notice, appUrl: string, label = { text: 'Open', html: 'Open Task Service' }): { from: string; to: string; subject: string; text: string; html: string } {
  const link = appLink(appUrl, n.url);
  const text = [n.body, link ? `${label.text}: ${link}` : null].filter(Boolean).join('\n\n');
  const html = `<p>${escapeHtml(n.body).replace(/\n/g, '<br>')}</p>${link ? `<p><a href="${escapeHtml(link)}">${escapeHtml(label.html)}</a></p>` : ''}`;
  return { from, to, subject: n.title, text, html };
}

/** What the service worker receives (decrypted) in its push event; `actions` become notification buttons (ui/public/sw.js). */
export function pushPayload(n: Notice): string {
  const actions = (n.actions ?? []).map((a) => ({ action: a.id, title: a.label, url: a.url }));
  return JSON.stringify({ title: n.title, body: n.body, url: n.url, tag: n.tag, ...(actions.length > 0 ? { actions } : {}) });
}

export type SendOutcome = { kind: 'sent' } | { kind: 'retry'; error: string } | { kind: 'failed'; error: string } | { kind: 'gone'; error: string };

/**
 * A receiver's answer as shown in test results, the history and logs (issue 56 #9): its first 200
 * characters, with control characters (terminal escapes, line breaks that fake log lines), bidi
 * overrides and invisible formatting turned into spaces; the caller says whose text it is.
 */
export function receiverText(detail: string): string {
  return detail
    .slice(0, 200)
    // eslint-disable-next-line no-control-regex -- control characters are what it is about
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** `what` went wrong, then the receiver's own words when it said any (issue 56 #9): how every channel labels them. */
export function withReceiverAnswer(what: string, detail: string): string {
  const said = receiverText(detail);
  return said ? `${what}; the receiver answered: “${said}”` : what;
}

/**
 * 2xx is sent. 408, 429, 5xx, redirects (never followed) and network errors are transient. 404/410
 * from a push service means the subscription is gone. Other 4xx are permanent (bad token, chat…).
 */
export function judgeHttp(status: number, detail: string, opts: { push?: boolean } = {}): SendOutcome {
  if (status >= 200 && status < 300) return { kind: 'sent' };
  const error = withReceiverAnswer(`HTTP ${status}`, detail);
  if (opts.push && (status === 404 || status === 410)) return { kind: 'gone', error };
  if (status === 408 || status === 429 || status >= 500 || (status >= 300 && status < 400)) return { kind: 'retry', error };
  return { kind: 'failed', error };
}

/** Attempts per (notification, channel, target) before giving up. */
export const MAX_ATTEMPTS = 8;
