/** Reading Prometheus text exposition in tests: scrape a `/metrics` endpoint and sum matching samples. */

export type Scrape = Map<string, { labels: Record<string, string>; value: number }[]>;

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    const list = out.get(m[1]!) ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.set(m[1]!, list);
  }
  return out;
}

export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return parseMetrics(await res.text());
}

/** Sum of every sample of `name` whose labels include `labels` (0 when there is none). */
export function value(s: Scrape, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const sample of s.get(name) ?? []) if (Object.entries(labels).every(([k, v]) => sample.labels[k] === v)) sum += sample.value;
  return sum;
}

/** Whether `name` has at least one sample with these labels. */
export function has(s: Scrape, name: string, labels: Record<string, string> = {}): boolean {
  return (s.get(name) ?? []).some((sample) => Object.entries(labels).every(([k, v]) => sample.labels[k] === v));
}
