import { scrape, value } from '../../testenv/metrics.ts';
import { until } from '../../testenv/wait.ts';

/**
 * Until every process (name → its /metrics URL) has trimmed once (services/runtime/src/memory-trim.ts:
 * each trims what start-up left in its first idle window after ready). A bench that reads idle memory
 * or idle CPU waits for it, so it measures the process as it idles from then on rather than the one
 * collection that hands start-up's memory back.
 */
export async function trimmedOnce(metricsUrls: Map<string, string>, limitMs = 180_000): Promise<void> {
  let waiting: string[] = [];
  await until(
    async () => {
      // a scrape is work: at until's 50 ms pace it kept every process above the trim's idle share
      await new Promise((r) => setTimeout(r, 2_000));
      const counts = await Promise.all([...metricsUrls].map(async ([name, url]) => [name, value(await scrape(url), 'tasksvc_memory_trims_total')] as const));
      waiting = counts.filter(([, count]) => count === 0).map(([name]) => name);
      return waiting.length === 0;
    },
    'every process trimmed while idle',
    limitMs,
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; not yet: ${waiting.join(', ')}`);
  });
}
