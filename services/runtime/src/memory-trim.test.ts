import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shouldTrim, TRIM_POLICY, type Trim } from './memory-trim.ts';

const trimModule = new URL('./memory-trim.ts', import.meta.url).href;

/**
 * A child node with the services' semi-space that grows its heap the way a burst of requests does
 * (short-lived objects by the million, a batch that survives a while), lets it all go, then runs
 * `body`; prints what the body's last expression resolves to as JSON.
 */
function inChild(body: string): Trim & { counted?: number } {
  const script = `
    const trim = await import(${JSON.stringify(trimModule)});
    let batch = [];
    for (let i = 0; i < 2_000_000; i++) {
      batch.push({ id: i, title: 'task ' + i, tags: [i % 7, i % 11] });
      if (batch.length === 200_000) batch = [];
    }
    batch = [];
    const result = await (async () => { ${body} })();
    console.log(JSON.stringify(result));`;
  const r = spawnSync(process.execPath, ['--max-semi-space-size=8', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Trim & { counted?: number };
}

describe('shouldTrim', () => {
  const idle = { cpuMs: 50, wallMs: 10_000, rss: 120e6, rssAfterLastTrim: 80e6 };
  it('trims a process that idled through the window and grew since its last trim', () => {
    expect(shouldTrim(idle)).toBe(true);
    expect(shouldTrim({ ...idle, rssAfterLastTrim: 0 }), 'never trimmed: start-up').toBe(true);
  });
  it('leaves a busy process alone, however much it grew', () => {
    expect(shouldTrim({ ...idle, cpuMs: TRIM_POLICY.idleShare * idle.wallMs })).toBe(false);
    expect(shouldTrim({ ...idle, cpuMs: 4_000 })).toBe(false);
  });
  it('does not trim again while the process has not grown by the policy’s margin', () => {
    expect(shouldTrim({ ...idle, rss: idle.rssAfterLastTrim + TRIM_POLICY.growthBytes })).toBe(false);
    expect(shouldTrim({ ...idle, rss: idle.rssAfterLastTrim - 5e6 })).toBe(false);
  });
  it('reads an empty window as nothing to go on', () => {
    expect(shouldTrim({ ...idle, cpuMs: 0, wallMs: 0 })).toBe(false);
  });
});

describe('trimMemory', () => {
  it('hands the pages a burst left committed back to the system (RSS and the committed heap shrink)', () => {
    const t = inChild('return trim.trimMemory();');
    expect(t.heapAfter).toBeLessThan(t.heapBefore - 8e6);
    expect(t.rssAfter).toBeLessThan(t.rssBefore - 8e6);
  });
});

describe('startMemoryTrim', () => {
  it('trims once the process idles after it grew, and counts the trim in tasksvc_memory_trims_total', () => {
    const t = inChild(`
      const { registry } = await import(${JSON.stringify(new URL('./metrics.ts', import.meta.url).href)});
      const log = { debug() {} };
      // the trim's timer does not keep a process alive; this one does until the trim is in
      const alive = setInterval(() => {}, 60_000);
      const trimmed = await new Promise((resolve) => {
        const stop = trim.startMemoryTrim(log, { everyMs: 50, idleShare: 0.5, growthBytes: 8e6 }, (t) => { stop(); resolve(t); });
      });
      clearInterval(alive);
      const metric = await registry.getSingleMetric('tasksvc_memory_trims_total').get();
      return { ...trimmed, counted: metric.values[0].value };`);
    expect(t.rssAfter).toBeLessThan(t.rssBefore - 8e6);
    expect(t.counted).toBe(1);
  });
});
