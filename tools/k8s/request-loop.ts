import { until } from '../testenv/index.ts';

/**
 * GETs `url` in a loop while `change` happens (a rollout, a version change) and until `settled`:
 * how many requests were sent and every one that was not a 200 (its status, or the network error).
 */
export async function requestsDuring(
  url: string,
  authorization: string,
  change: () => Promise<unknown>,
  settled: () => Promise<boolean>,
  what: string,
  limitMs = 300_000,
): Promise<{ requests: number; failures: string[] }> {
  const failures: string[] = [];
  let requests = 0;
  let running = true;
  const load = (async () => {
    while (running) {
      requests++;
      const r = await fetch(url, { headers: { authorization } }).then(
        (x) => (x.status === 200 ? '' : `HTTP ${x.status}`),
        (e: Error) => `${e.message}: ${String((e as { cause?: unknown }).cause)}`,
      );
      if (r) failures.push(r);
    }
  })();
  try {
    await change();
    await until(settled, what, limitMs);
  } finally {
    running = false;
    await load;
  }
  return { requests, failures };
}

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
