import { describe, expect, it } from 'vitest';
import { heavyAtStart, loadedAtStart, notAtStart } from './start-imports.ts';

// Each service's module graph at start (what a new replica imports before it is ready): no tracing SDK
// (startTracing imports it when tracing is on), no test or development tooling, no other service's
// libraries. What the import does load, and what it keeps: tools/bench/footprint.ts --why.
describe('a service at start', () => {
  it.each(['auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'gateway'] as const)('%s loads only what it uses', (service) => {
    const urls = loadedAtStart(`services/${service}/src/service.ts`);
    expect(urls.some((u) => u.includes(`/services/${service}/src/`))).toBe(true);
    expect(heavyAtStart(urls, notAtStart(service))).toEqual([]);
  });
});
