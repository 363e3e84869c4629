import { describe, expect, it } from 'vitest';
import { channels } from './index.ts';

// Why a channel is unavailable is shown to users (a 400 on saving it): plain words, never the
// operator's variable names (those are in docs/notifications.md). Issue 55.
describe('channel availability reasons', () => {
  it('name no operator variable', () => {
    const reasons = Object.values(channels).flatMap((c) => (c.availability ? [c.availability.reason] : []));
    expect(reasons.length).toBeGreaterThan(0);
    for (const r of reasons) expect(r).not.toMatch(/[A-Z]+_[A-Z_]+/);
  });
});
