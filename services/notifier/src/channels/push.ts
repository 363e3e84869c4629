import { listPushSubscriptions, removePushSubscriptionById } from '../db/store.ts';
import { pushPayload } from '../domain/messages.ts';
import { sendHttp, type Channel } from './channel.ts';

// web-push and its crypto stack (bn.js, asn1.js, jws: ~200 KB of source) come with the first push, not at start (issue 58, Memory)
let webPush: Promise<typeof import('web-push')> | undefined;
const loadWebPush = () => (webPush ??= import('web-push').then((m) => m.default));

/** Web push to every device the user subscribed (one target each), encrypted with the VAPID keys. */
export const push: Channel = {
  secretFields: [],
  requiredSecrets: [],
  availability: {
    available: (config) => Boolean(config.PUBLIC_VAPID_PUBLIC_KEY && config.VAPID_PRIVATE_KEY),
    reason: 'browser push is not set up on this server; ask its operator',
  },
  async targets({ config, pool, outbound }, { userId }) {
    return (await listPushSubscriptions(pool, userId)).map((sub) => ({
      channel: 'push' as const,
      target: sub.id,
      send: async (n) => {
        const details = (await loadWebPush()).generateRequestDetails({ endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } }, pushPayload(n), {
          vapidDetails: { subject: config.VAPID_CONTACT, publicKey: config.PUBLIC_VAPID_PUBLIC_KEY!, privateKey: config.VAPID_PRIVATE_KEY! },
          TTL: 24 * 3600,
          urgency: 'normal',
          contentEncoding: 'aes128gcm',
        });
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(details.headers)) if (k.toLowerCase() !== 'content-length') headers[k] = String(v);
        const outcome = await sendHttp(outbound, { url: details.endpoint, method: 'POST', headers, body: details.body }, { push: true });
        // the push service says this device unsubscribed: forget it
        if (outcome.kind === 'gone') await removePushSubscriptionById(pool, sub.id);
        return outcome;
      },
    }));
  },
};
