import { createMemo, createResource, createRoot } from 'solid-js';
import { read } from './cache.ts';
import { connection, lastGood } from './connection.ts';
import { session } from './session.ts';
import { todayIn } from './dates.ts';
import { isDeleted } from './undoable-delete.ts';
import type { Profile, Topic } from './types.ts';

/**
 * Data many screens share: the profile (timezone → "today") and the topic list. Fetched once the user
 * is fully signed in and again for another user. Read through `.latest` with an initial value, so a
 * refetch never puts the page back into its loading state (which would unmount it and lose focus).
 */
export const shared = createRoot(() => {
  const [profileRes, { refetch: refetchProfile }] = createResource(session.ready, async () => (await read('/api/settings/profile')).profile, { initialValue: undefined as Profile | undefined });
  const [topicsRes, { refetch: refetchTopics }] = createResource(session.ready, async () => (await read('/api/topics')).topics, { initialValue: undefined as Topic[] | undefined });
  const profile = lastGood(profileRes);
  const topicList = lastGood(topicsRes);
  // A topic deleted with Undo pending is gone from every list and picker already.
  const topics = () => topicList()?.filter((t) => !isDeleted(t.id));
  // Back online: whatever failed meanwhile is fetched again (the last values stay shown until then).
  connection.onReconnect(() => {
    if (session.me.error) void session.refetch();
    if (session.ready()) {
      void refetchProfile();
      void refetchTopics();
    }
  });
  const timezone = createMemo(() => profile()?.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone);
  /** today's calendar date in the user's configured timezone */
  const today = createMemo(() => todayIn(timezone()));
  return { profile, refetchProfile, topics, refetchTopics, timezone, today };
});
