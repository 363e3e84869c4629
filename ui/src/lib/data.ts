import { createMemo, createResource, createRoot } from 'solid-js';
import { get } from './api.ts';
import { todayIn } from './dates.ts';
import type { Profile, Topic } from './types.ts';

/** Data many screens share: the profile (timezone → "today") and the topic list. */
export const shared = createRoot(() => {
  const [profile, { refetch: refetchProfile }] = createResource(async () => (await get<{ profile: Profile }>('/api/settings/profile')).profile);
  const [topics, { refetch: refetchTopics }] = createResource(async () => (await get<{ topics: Topic[] }>('/api/topics')).topics);
  const timezone = createMemo(() => profile()?.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone);
  /** today's calendar date in the user's configured timezone */
  const today = createMemo(() => todayIn(timezone()));
  return { profile, refetchProfile, topics, refetchTopics, timezone, today };
});
