import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@tasksvc/runtime';
import { until } from '../testenv/wait.ts';

/** Debian's `prometheus` (2.42): `apt-get install -y prometheus`; undefined when it is not installed. */
export const PROMETHEUS_BIN: string | undefined = ['/usr/bin/prometheus', '/usr/local/bin/prometheus'].find((p) => existsSync(p));

export interface ScrapeTarget {
  /** the `job` label, as the Prometheus operator sets it (the Service's name) */
  job: string;
  /** a `/metrics` URL on loopback */
  url: string;
  /** extra target labels (`namespace`, as Kubernetes service discovery adds it) */
  labels?: Record<string, string>;
}

export interface Series {
  metric: Record<string, string>;
  /** [unix seconds, value as Prometheus prints it] */
  values: [number, string][];
}

/** Prometheus refused the query (`bad_data`: not valid PromQL) or failed to run it. */
export class QueryError extends Error {}

export interface LocalPrometheus {
  url: string;
  scrapeSeconds: number;
  queryRange(expr: string, start: number, end: number, stepSeconds: number): Promise<Series[]>;
  /** the value of a one-series expression now (NaN when it has none) */
  scalar(expr: string): Promise<number>;
  labelValues(label: string, match: string): Promise<string[]>;
  /** every target's health as Prometheus last saw it */
  targets(): Promise<{ job: string; health: string; lastError: string }[]>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * A private Prometheus for one test: its own config and data directory in a temporary folder, a free
 * loopback port, every target scraped each `scrapeSeconds`. Resolves once it is ready.
 */
export async function startPrometheus(targets: ScrapeTarget[], opts: { scrapeSeconds?: number } = {}): Promise<LocalPrometheus> {
  if (!PROMETHEUS_BIN) throw new Error('prometheus is not installed: apt-get install -y prometheus');
  const scrapeSeconds = opts.scrapeSeconds ?? 1;
  const dir = mkdtempSync(join(tmpdir(), 'prometheus-'));
  const interval = `${scrapeSeconds}s`;
  // JSON is YAML: one scrape job per target, so `job` is the service as on Kubernetes.
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    scrape_configs: targets.map((t) => {
      const u = new URL(t.url);
      return { job_name: t.job, metrics_path: u.pathname, static_configs: [{ targets: [u.host], labels: t.labels ?? {} }] };
    }),
  };
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const append = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const stop = async () => {
    if (child.exitCode === null && !child.signalCode) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const api = async <T>(path: string, params: Record<string, string | string[]>): Promise<T> => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const one of [v].flat()) q.append(k, one);
    const res = await fetch(`${url}${path}?${q}`, { signal: AbortSignal.timeout(30_000) });
    const body = (await res.json()) as { status: string; data: T; errorType?: string; error?: string };
    if (body.status !== 'success') throw new QueryError(`${body.errorType}: ${body.error}`);
    return body.data;
  };

  try {
    await until(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}`);
        return (await fetch(`${url}/-/ready`).catch(() => undefined))?.status === 200;
      },
      'prometheus to be ready',
      60_000,
    );
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${output}`, { cause: err });
  }

  return {
    url,
    scrapeSeconds,
    async queryRange(expr, start, end, stepSeconds) {
      const data = await api<{ resultType: string; result: Series[] }>('/api/v1/query_range', { query: expr, start: String(start), end: String(end), step: String(stepSeconds) });
      return data.result;
    },
    async scalar(expr) {
      const data = await api<{ result: { value: [number, string] }[] }>('/api/v1/query', { query: expr });
      return data.result.length === 1 ? Number(data.result[0]!.value[1]) : NaN;
    },
    labelValues: (label, match) => api<string[]>(`/api/v1/label/${encodeURIComponent(label)}/values`, { 'match[]': match }),
    async targets() {
      const data = await api<{ activeTargets: { labels: Record<string, string>; health: string; lastError: string }[] }>('/api/v1/targets', {});
      return data.activeTargets.map((t) => ({ job: t.labels.job ?? '', health: t.health, lastError: t.lastError }));
    },
    output: () => output,
    stop,
  };
}
