import { until } from '../testenv/index.ts';
import type { NodeCluster } from './node.ts';

/**
 * GETs `url` in a loop while `change` happens (a rollout, a version change) and until `settled`:
 * how many requests were sent and every one that was not a 200: when (UTC, to read beside the events,
 * and seconds after the loop began), its status and the error body's code and message, or the network
 * error. What failed says which part of the rollout dropped it (a bus without a responder, a database
 * connection, a refused socket).
 */
export async function requestsDuring(
  url: string,
  authorization: string,
  change: () => Promise<unknown>,
  settled: () => Promise<boolean>,
  what: string,
  { limitMs = 300_000, explain }: { limitMs?: number; /** printed after failed requests (e.g. eventsOf) */ explain?: () => Promise<string> } = {},
): Promise<{ requests: number; failures: string[] }> {
  const failures: string[] = [];
  let requests = 0;
  let running = true;
  const t0 = Date.now();
  const load = (async () => {
    while (running) {
      requests++;
      const r = await fetch(url, { headers: { authorization } }).then(
        async (x) => (x.status === 200 ? '' : `HTTP ${x.status} ${(await x.text()).slice(0, 300)}`),
        (e: Error) => `${e.message}: ${String((e as { cause?: unknown }).cause)}`,
      );
      if (r) failures.push(`${new Date().toISOString().slice(11, 22)}Z (+${((Date.now() - t0) / 1000).toFixed(1)} s): ${r}`);
    }
  })();
  try {
    await change();
    await until(settled, what, limitMs);
  } finally {
    running = false;
    await load;
  }
  if (failures.length && explain) console.log(`[request loop] ${what}: ${failures.length} of ${requests} requests failed:\n${failures.join('\n')}\n${await explain()}`);
  return { requests, failures };
}

/** A namespace's events, oldest first: what the cluster did around failed requests (events outlive the pods they name). */
export const eventsOf = (cluster: Pick<NodeCluster, 'kubectl'>, namespace: string): Promise<string> =>
  cluster.kubectl('get', 'events', '-n', namespace, '--sort-by=.lastTimestamp', '-o', 'custom-columns=LAST:.lastTimestamp,TYPE:.type,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message').catch(
    (e: Error) => `events: ${e.message}`,
  );

/** POST a task through the gateway at `baseUrl`; its id (a request that is not a 201 throws with the answer). */
export async function createTask(baseUrl: string, authorization: string, title: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/tasks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ title }),
  });
  if (res.status !== 201) throw new Error(`POST ${baseUrl}/api/tasks: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { task: { id: string } }).task.id;
}
