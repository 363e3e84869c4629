import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskEventTask } from '@tasksvc/proto';
import { ALL_SERVICES, startSystem, type RunningSystem } from '../../../tools/system.ts';
import { fileNats, serveTestIdentities, testSystemConfig } from '../../../tools/testenv/index.ts';
import { callAs, startReceiver, until, type Receiver } from '../test/support.ts';

/**
 * The real chain: a task created through the gateway is written with its event in the tasks
 * service's outbox, relayed to JetStream, delivered (signed) by the webhook service; an endpoint
 * answering 410 is disabled and its owner's HTTP Alert channel hears about it through the notifier.
 */

const nats = fileNats();
let sys: RunningSystem;
let rx: Receiver;
const user = randomUUID();
const SECRET = 'e2e-signing-secret';

const call = (method: string, url: string, body?: unknown) => callAs(sys.url, user, method, url, body);

beforeAll(async () => {
  rx = await startReceiver();
  rx.respond = (req) => ({ status: req.path === '/gone' ? 410 : 200 });
  const config = await testSystemConfig({ OUTBOUND_ALLOW_LIST: '127.0.0.1', TOTP_ENCRYPTION_KEY: randomBytes(32).toString('hex') }, { natsUrl: nats.url() });
  sys = await startSystem(config, { services: ALL_SERVICES.filter((s) => ['tasks', 'notifier', 'webhook', 'gateway'].includes(s.name)) });
  serveTestIdentities(sys.bus);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
  await rx?.close();
});

describe('tasks → outbox → JetStream → webhook (and notifier)', () => {
  it('delivers signed task events for tasks created and completed through the API', async () => {
    expect((await call('PUT', '/api/settings/notification-channels/http-alert', { config: { url: `${rx.url}/alert` } })).status).toBe(200);
    expect((await call('POST', '/api/settings/webhooks', { url: `${rx.url}/hook`, secret: SECRET })).status).toBe(201);
    expect((await call('POST', '/api/settings/webhooks', { url: `${rx.url}/gone`, events: ['task.created'] })).status).toBe(201);

    const created = await call('POST', '/api/tasks', { title: 'Ship the release', priority: 'HIGH', dueDate: '2026-12-24' });
    expect(created.status).toBe(201);
    const taskId = (created.json.task?.id ?? created.json.id) as string;
    expect((await call('POST', `/api/tasks/${taskId}/complete`, {})).status).toBe(200);

    const hooks = await until(async () => {
      const got = rx.requests.filter((r) => r.path === '/hook');
      return got.length >= 2 ? got : null;
    }, 'created and completed events', 30_000);
    const byEvent = new Map(hooks.map((r) => [String(r.headers['x-service-event']), r]));
    for (const [event, req] of byEvent) {
      const expected = Buffer.from(`sha256=${createHmac('sha256', SECRET).update(req.raw).digest('hex')}`);
      const given = Buffer.from(String(req.headers['x-service-signature']));
      expect(given.length === expected.length && timingSafeEqual(given, expected), event).toBe(true);
    }
    const c = JSON.parse(byEvent.get('task.created')!.raw.toString());
    expect(Object.keys(c)).toEqual(['event', 'timestamp', 'task']);
    // the spec's fields, and every other field events carry (taskEventTask: derived from the task)
    expect(Object.keys(c.task)).toEqual(expect.arrayContaining(['completedAt', 'createdAt', 'dueDate', 'id', 'priority', 'title', 'topicId', 'type']));
    expect(Object.keys(c.task).sort()).toEqual(Object.keys(taskEventTask.shape).sort());
    expect(c.task).toMatchObject({ id: taskId, title: 'Ship the release', type: 'ONE_TIME', priority: 'HIGH', topicId: null, dueDate: '2026-12-24', completedAt: null });
    const done = JSON.parse(byEvent.get('task.completed')!.raw.toString());
    expect(done.event).toBe('task.completed');
    expect(done.task.completedAt).not.toBeNull();

    // the endpoint that answered 410 is disabled, and the owner hears about it on their HTTP Alert channel
    // (the completion's achievement notifications reach the same channel, in any order)
    const alert = await until(async () => rx.requests.find((r) => r.path === '/alert' && JSON.parse(r.raw.toString()).tag === 'webhook-disabled'), 'owner notified', 30_000);
    expect(JSON.parse(alert.raw.toString())).toMatchObject({ event: 'service.notification', title: 'Webhook endpoint disabled', tag: 'webhook-disabled', url: '/settings/integrations' });
    const list = await call('GET', '/api/settings/webhooks');
    expect(list.json.webhooks.find((w: { url: string }) => w.url === `${rx.url}/gone`)).toMatchObject({ enabled: false });
  });
});
