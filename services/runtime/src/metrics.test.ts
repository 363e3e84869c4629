import { describe, expect, it } from 'vitest';
import { BoundedLabel, outcomeOfCode } from './metrics.ts';

describe('metric labels stay bounded', () => {
  it('keeps the first distinct values and counts any further one as "other"', () => {
    const label = new BoundedLabel(2);
    expect([label.of('events.task.created'), label.of('events.task.updated'), label.of('events.task.created')]).toEqual(['events.task.created', 'events.task.updated', 'events.task.created']);
    expect(label.of('events.task.invented-by-a-peer')).toBe('other');
    expect(label.of('events.task.updated')).toBe('events.task.updated');
  });

  it('maps an error code to one of five outcomes', () => {
    expect(outcomeOfCode(undefined)).toBe('ok');
    expect(outcomeOfCode('VALIDATION_FAILED')).toBe('rejected');
    expect(outcomeOfCode('TASKS_NOT_FOUND')).toBe('rejected');
    expect(outcomeOfCode('INTERNAL')).toBe('failed');
    expect(outcomeOfCode('no-such-code')).toBe('failed');
    expect(outcomeOfCode('TIMEOUT')).toBe('timeout');
    expect(outcomeOfCode('SERVICE_UNAVAILABLE')).toBe('unavailable');
    expect(outcomeOfCode('DATABASE_UNAVAILABLE')).toBe('unavailable');
  });
});
