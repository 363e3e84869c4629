import { describe, expect, it } from 'vitest';
import { channels } from '../channels/index.ts';
import { hasFlag, mergeChannelInput, redactedConfig } from './channel-config.ts';
import { appLink, emailMessage, httpAlertBody, judgeHttp, receiverText, ntfyMessage, pushoverMessage, pushPayload, telegramMessage } from './messages.ts';

const n = { title: 'Due today', body: 'Pay rent <now> & "soon"', url: '/tasks?view=today', tag: 'due-today' };
const APP = 'https://tasks.example.test/';

describe('notification messages', () => {
  it('links only relative application paths', () => {
    expect(appLink(APP, '/tasks')).toBe('https://tasks.example.test/tasks');
    expect(appLink(APP, null)).toBeNull();
    expect(appLink(APP, 'https://evil.example/')).toBeNull();
    expect(appLink(APP, '//evil.example/')).toBeNull();
  });

  it('HTTP Alert body has exactly the spec fields in order', () => {
    const body = httpAlertBody(n, new Date('2026-11-22T05:00:00.000Z'));
    expect(body).toBe('{"event":"service.notification","title":"Due today","body":"Pay rent <now> & \\"soon\\"","url":"/tasks?view=today","tag":"due-today","timestamp":"2026-11-22T05:00:00.000Z"}');
    expect(JSON.parse(httpAlertBody({ ...n, url: null, tag: null }, new Date(0)))).toMatchObject({ url: null, tag: null });
  });

  it('ntfy publishes JSON to the server root, token as bearer, optional fields only when set', () => {
    const m = ntfyMessage({ server: 'https://ntfy.sh/', topic: 't1', priority: null, token: null }, { ...n, url: null, tag: null }, APP);
    expect(m.url).toBe('https://ntfy.sh/');
    expect(m.headers.authorization).toBeUndefined();
    expect(JSON.parse(m.body as string)).toEqual({ topic: 't1', title: 'Due today', message: n.body });
    const full = ntfyMessage({ server: 'https://ntfy.example', topic: 't1', priority: 5, token: 'tk' }, n, APP);
    expect(full.headers.authorization).toBe('Bearer tk');
    expect(JSON.parse(full.body as string)).toMatchObject({ priority: 5, tags: ['due-today'], click: 'https://tasks.example.test/tasks?view=today' });
  });

  it('a reminder\'s actions: ntfy "http" action buttons (absolute URL, POST) and Web Push actions', () => {
    const actions = [
      { id: 'done' as const, label: 'Done', url: '/api/reminder-actions/abc.def' },
      { id: 'snooze' as const, label: 'Snooze 1 h', url: '/api/reminder-actions/ghi.jkl' },
    ];
    const m = ntfyMessage({ server: 'https://ntfy.sh', topic: 't1', priority: null, token: null }, { ...n, tag: 'reminder', actions }, APP);
    expect(JSON.parse(m.body as string).actions).toEqual([
      { action: 'http', label: 'Done', url: 'https://tasks.example.test/api/reminder-actions/abc.def', method: 'POST', clear: true },
      { action: 'http', label: 'Snooze 1 h', url: 'https://tasks.example.test/api/reminder-actions/ghi.jkl', method: 'POST', clear: true },
    ]);
    expect(JSON.parse(pushPayload({ ...n, actions })).actions).toEqual([
      { action: 'done', title: 'Done', url: '/api/reminder-actions/abc.def' },
      { action: 'snooze', title: 'Snooze 1 h', url: '/api/reminder-actions/ghi.jkl' },
    ]);
  });

  it('Pushover and Telegram requests', () => {
    const po = pushoverMessage('https://api.pushover.net', { appToken: 'a', userKey: 'u', device: 'phone', priority: -1 }, n, APP);
    expect(po.url).toBe('https://api.pushover.net/1/messages.json');
    expect(Object.fromEntries(new URLSearchParams(po.body as string))).toMatchObject({ token: 'a', user: 'u', device: 'phone', priority: '-1' });
    const tg = telegramMessage('https://api.telegram.org', { botToken: '1:x', chatId: '@chan' }, { ...n, url: null }, APP);
    expect(tg.url).toBe('https://api.telegram.org/bot1:x/sendMessage');
    expect(JSON.parse(tg.body as string)).toEqual({ chat_id: '@chan', text: `Due today\n\n${n.body}`, disable_web_page_preview: true });
  });

  it('email escapes HTML; push payload carries the four fields', () => {
    const e = emailMessage('A <a@x.test>', 'b@x.test', n, APP);
    expect(e.subject).toBe('Due today');
    expect(e.html).toContain('Pay rent &lt;now&gt; &amp; &quot;soon&quot;');
    expect(e.text).toContain('Open: https://tasks.example.test/tasks?view=today');
    expect(JSON.parse(pushPayload(n))).toEqual({ title: 'Due today', body: n.body, url: '/tasks?view=today', tag: 'due-today' });
  });

  it.each([
    [200, false, 'sent'],
    [201, true, 'sent'],
    [302, false, 'retry'],
    [408, false, 'retry'],
    [429, false, 'retry'],
    [500, false, 'retry'],
    [400, false, 'failed'],
    [401, false, 'failed'],
    [404, false, 'failed'],
    [404, true, 'gone'],
    [410, true, 'gone'],
    [410, false, 'failed'],
  ] as const)('HTTP %i (push: %s) is %s', (status, push, kind) => {
    expect(judgeHttp(status, '', { push }).kind).toBe(kind);
  });
});

describe('channel settings', () => {
  it('keeps stored secrets when omitted, removes them on null, and lists missing required ones', () => {
    const r = mergeChannelInput(channels['pushover'], { userKey: 'new-user', device: null }, { appToken: 'stored-app', userKey: 'old-user' });
    expect(r).toEqual({ config: { device: null }, secrets: { appToken: 'stored-app', userKey: 'new-user' }, newSecrets: ['userKey'], missing: [] });
    expect(mergeChannelInput(channels['pushover'], { appToken: null }, { appToken: 'x', userKey: 'y' }).missing).toEqual(['appToken']);
    expect(mergeChannelInput(channels['telegram'], { chatId: '1' }, {}).missing).toEqual(['botToken']);
    expect(mergeChannelInput(channels['http-alert'], { url: 'https://x.test', secret: null }, { secret: 's' }).secrets).toEqual({});
  });

  it('shows secrets only as has… flags', () => {
    expect(hasFlag('botToken')).toBe('hasBotToken');
    expect(redactedConfig(channels['ntfy'].secretFields, { topic: 't', server: null, priority: null }, ['token'])).toEqual({ topic: 't', server: null, priority: null, hasToken: true });
    expect(redactedConfig(channels['http-alert'].secretFields, { url: 'u' }, [])).toEqual({ url: 'u', hasSecret: false });
  });
});

describe("a receiver's answer in errors (#56.9)", () => {
  it('says whose text it is, keeps 200 characters, and strips control characters, bidi overrides and fake log lines', () => {
    const evil = 'bad token\n{"level":50,"msg":"admin signed in"}\r\u001b[2J\u202egnp.exe\u0000' + 'x'.repeat(300);
    const out = judgeHttp(400, evil);
    expect(out).toMatchObject({ kind: 'failed' });
    const error = (out as { error: string }).error;
    expect(error.startsWith('HTTP 400; the receiver answered: “bad token {"level":50')).toBe(true);
    // eslint-disable-next-line no-control-regex -- control characters are what it is about
    expect(error).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(receiverText(evil).length).toBeLessThanOrEqual(200);
    expect(judgeHttp(500, '')).toEqual({ kind: 'retry', error: 'HTTP 500' });
  });
});
