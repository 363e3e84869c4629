import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLUSTER_SERVICES, startCluster, type Cluster } from '../chaos/cluster.ts';
import { freePort } from '@tasksvc/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbedded, type EmbeddedProcess } from '../testenv/embedded.ts';
import { testDatabase, until } from '../testenv/index.ts';
import { allPanels, loadDashboard, substitute } from './dashboard.ts';
import { operatorUnavailable, startMetricsOperator, type MetricsOperator } from '../../operator/test/metrics-operator.ts';
import { PROMETHEUS_BIN, startPrometheus, type LocalPrometheus, type ScrapeTarget } from './prometheus.ts';
import { DOC_SHOTS, renderDashboardHtml, screenshotRows } from './render-dashboard.ts';
import { startTraffic, type Traffic } from './traffic.ts';

/**
 * The Grafana dashboard proven against a real Prometheus (Debian's 2.42) scraping a running system:
 * every target expression of every panel is valid PromQL and returns data after a steady run of
 * task creates and lists, refused requests, webhook deliveries (one retried, some failing), a
 * notification and a cron run (distributed: also an outage of the tasks service, and the operator
 * looking after a TaskService on a real kube-apiserver); then the dashboard is drawn from the same queries
 * (render-dashboard.ts) and screenshotted. With DOCS_IMAGES=1 the distributed run's pictures are
 * copied to docs/images/ (docs/observability.md shows them).
 */

const SKIP = PROMETHEUS_BIN ? '' : 'the prometheus binary is missing (apt-get install -y prometheus; .ci/run installs it)';
if (SKIP) console.warn(`\n!!! dashboard tests SKIPPED: ${SKIP}\n`);

const NAMESPACE = 'tasks-demo';
const SCRAPE_SECONDS = 1;
const root = new URL('../..', import.meta.url).pathname;
const SHOTS = join(root, 'test-results', 'screenshots');
const env = { OUTBOUND_ALLOW_LIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1', RATE_LIMIT_WRITES: 'false', LOG_LEVEL: 'warn' };

/** Panels (by title) or single targets (`title › refId`) that have no data in these runs, and why. A listed one that does get data fails the test too. */
const OPERATOR = 'no operator runs with npm start (it needs a Kubernetes API server)';
const NO_DATA_ANYWHERE: Record<string, string> = {
  Reconciles: OPERATOR,
  'Reconcile duration (p95)': OPERATOR,
  'Queue depth and leader': OPERATOR,
};
const NO_DATA_EMBEDDED: Record<string, string> = {
  ...NO_DATA_ANYWHERE,
  'Request errors by outcome › B': 'no bus request timed out or found no service: in one process there is no service to stop',
};
/**
 * Data or none, depending on the order of two things the test does not control; not asserted
 * either way here (the distributed run, where the test makes the only cron call, asserts data).
 */
const MAYBE_EMBEDDED: Record<string, string> = {
  'Cron job duration (p95)':
    'npm start runs the bucket’s jobs once at start and the test’s cron call finds them done (one run per job and 5-minute bucket): the p95 has a value only if Prometheus scraped once before that start-up run ended',
};

/**
 * A steady run through the public API: a create and a list about every 300 ms, a refused create and
 * a missing task every 10th round, a test notification at the start and in the middle, one cron
 * call. Resolves when every delivery the creates caused has reached the receiver.
 */
async function steadyTraffic(traffic: Traffic, seconds: number): Promise<void> {
  const end = Date.now() + seconds * 1000;
  let creates = 0;
  await traffic.notify();
  for (let round = 0; Date.now() < end; round++) {
    await traffic.createTasks(1, `steady ${round}`);
    creates++;
    await traffic.list();
    if (round % 10 === 5) {
      await traffic.invalidCreate();
      await traffic.notFound();
    }
    if (round === 20) {
      await traffic.cron();
      await traffic.notify();
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  // /flaky: one delivery per create plus its one failed first attempt; /refuse: one per create
  const at = (path: string) => traffic.rx.requests.filter((r) => r.path === path).length;
  await until(() => at('/flaky') >= creates + 1 && at('/refuse') >= creates, 'every delivery to reach the receiver', 60_000);
}

/** Until Prometheus has scraped what the receiver saw (deliveries are counted just after the answer). */
async function scraped(prom: LocalPrometheus, traffic: Traffic): Promise<void> {
  const delivered = traffic.rx.requests.filter((r) => r.path === '/flaky').length - 1;
  await until(async () => (await prom.scalar('sum(tasksvc_webhook_deliveries_total{outcome="delivered"})')) >= delivered, 'Prometheus to scrape the last deliveries', 30_000);
}

async function targetsUp(prom: LocalPrometheus, jobs: number): Promise<void> {
  await until(async () => {
    const t = await prom.targets();
    return t.length === jobs && t.every((x) => x.health === 'up');
  }, 'every scrape target to be up', 60_000).catch(async (err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(await prom.targets())}`, { cause: err });
  });
}

/**
 * Every target of every panel, with Grafana's variables put in, over the whole run: Prometheus must
 * accept it, and it must return at least one series with a value, unless it is listed with a reason.
 */
async function checkEveryTarget(prom: LocalPrometheus, start: number, end: number, noData: Record<string, string>, maybe: Record<string, string> = {}): Promise<{ problems: string[]; checked: number }> {
  const step = Math.max(1, Math.ceil((end - start) / 200));
  const vars = { namespace: NAMESPACE, intervalSeconds: step, scrapeSeconds: SCRAPE_SECONDS, rangeSeconds: end - start };
  const problems: string[] = [];
  let checked = 0;
  for (const panel of allPanels(loadDashboard()).filter((p) => p.type !== 'row')) {
    for (const t of panel.targets ?? []) {
      checked++;
      const key = `${panel.title} › ${t.refId}`;
      const why = noData[key] ?? noData[panel.title];
      const expr = substitute(t.expr, vars);
      try {
        const series = await prom.queryRange(expr, start, end, step);
        if (maybe[key] ?? maybe[panel.title]) continue; // valid PromQL is all that is asserted
        const withValues = series.filter((s) => s.values.some(([, v]) => Number.isFinite(Number(v))));
        if (why && withValues.length > 0) problems.push(`${key}: listed as having no data (${why}), but ${withValues.length} series came back`);
        if (!why && withValues.length === 0) problems.push(`${key}: no series with a value (${series.length} series): ${expr}`);
      } catch (err) {
        problems.push(`${key}: ${(err as Error).message}: ${expr}`);
      }
    }
  }
  return { problems, checked };
}

/** The highest value a panel's target reached over the run. */
async function peak(prom: LocalPrometheus, title: string, refId: string, start: number, end: number): Promise<number> {
  const target = allPanels(loadDashboard()).find((p) => p.title === title)?.targets?.find((t) => t.refId === refId);
  if (!target) throw new Error(`no target ${title} › ${refId}`);
  const step = Math.max(1, Math.ceil((end - start) / 200));
  const series = await prom.queryRange(substitute(target.expr, { namespace: NAMESPACE, intervalSeconds: step, scrapeSeconds: SCRAPE_SECONDS, rangeSeconds: end - start }), start, end, step);
  return Math.max(0, ...series.flatMap((s) => s.values.map(([, v]) => Number(v)).filter(Number.isFinite)));
}

/** The dashboard drawn from the run: every panel with data has a line, every other one says why it has none. */
async function render(prom: LocalPrometheus, start: number, end: number, mode: string, source: string, noData: Record<string, string>, maybe: Record<string, string> = {}) {
  const html = await renderDashboardHtml(prom, { start, end, namespace: NAMESPACE, scrapeSeconds: SCRAPE_SECONDS, source, noData: { ...noData, ...maybe } });
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, `metrics-dashboard-${mode}.html`), html);
  const drawn = [...html.matchAll(/data-panel="([^"]*)" data-series="(\d+)"/g)].map((m) => ({ title: m[1]!.replace(/&amp;/g, '&'), series: Number(m[2]) }));
  expect(drawn.length).toBe(allPanels(loadDashboard()).filter((p) => p.type !== 'row').length);
  expect(drawn.filter((p) => p.series === 0 && !maybe[p.title]).map((p) => p.title).sort()).toEqual(drawn.filter((p) => noData[p.title]).map((p) => p.title).sort());
  const sizes = await screenshotRows(
    html,
    DOC_SHOTS.map((s) => ({ file: join(SHOTS, `metrics-${s.name.replace('dashboard-', `dashboard-${mode}-`)}`), rows: s.rows })),
  );
  for (const [file, bytes] of Object.entries(sizes)) expect(bytes, file).toBeLessThan(200 * 1024);
  return sizes;
}

describe.skipIf(!!SKIP)(SKIP ? `Grafana dashboard against Prometheus — SKIPPED: ${SKIP}` : 'Grafana dashboard against Prometheus: the single-process mode (npm start, METRICS_PORT)', () => {
  let app: EmbeddedProcess;
  let prom: LocalPrometheus;
  let traffic: Traffic;
  let start: number;

  beforeAll(async () => {
    const databaseUrl = await testDatabase('dashboard');
    const metricsPort = await freePort();
    app = await startEmbedded({ ...env, DATABASE_URL: databaseUrl, METRICS_PORT: String(metricsPort), AUTH_SECRET: 'dashboard-secret-dashboard-secret-dash-0', AUTH_TRUST_HOST: 'true' });
    start = Math.floor(Date.now() / 1000);
    prom = await startPrometheus([{ job: 'task-service', url: `http://127.0.0.1:${metricsPort}/metrics`, labels: { namespace: NAMESPACE } }], { scrapeSeconds: SCRAPE_SECONDS });
    traffic = await startTraffic(app.url, databaseUrl);
  }, 180_000);
  afterAll(async () => {
    await prom?.stop();
    await app?.stop();
    await traffic?.close();
  }, 60_000);

  it('every target of every panel is valid PromQL and returns data; the namespace variable finds the namespace', async () => {
    await targetsUp(prom, 1);
    await steadyTraffic(traffic, 20);
    await scraped(prom, traffic);
    const end = Math.floor(Date.now() / 1000);
    const { problems, checked } = await checkEveryTarget(prom, start, end, NO_DATA_EMBEDDED, MAYBE_EMBEDDED);
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(30);
    // the dashboard's variable query: label_values(tasksvc_bus_handler_duration_seconds_count, namespace)
    expect(await prom.labelValues('namespace', 'tasksvc_bus_handler_duration_seconds_count')).toEqual([NAMESPACE]);
    await render(prom, start, end, 'embedded', 'npm start (one process, METRICS_PORT), driven by tools/observability/dashboard.test.ts', NO_DATA_EMBEDDED, MAYBE_EMBEDDED);
  }, 240_000);
});

// The operator runs beside the distributed system when the kube-apiserver binaries are there (CI has them).
const NO_OPERATOR = operatorUnavailable();
const NO_DATA_DISTRIBUTED: Record<string, string> = NO_OPERATOR ? Object.fromEntries(Object.keys(NO_DATA_ANYWHERE).map((title) => [title, `no operator: ${NO_OPERATOR}`])) : {};

describe.skipIf(!!SKIP)(SKIP ? `Grafana dashboard against Prometheus (distributed) — SKIPPED: ${SKIP}` : 'Grafana dashboard against Prometheus: the distributed mode (a process per service, the operator)', () => {
  let cluster: Cluster;
  let operator: MetricsOperator | undefined;
  let prom: LocalPrometheus;
  let traffic: Traffic;
  let start: number;
  let targets: ScrapeTarget[];

  beforeAll(async () => {
    cluster = await startCluster(env);
    await cluster.ready(120_000);
    if (!NO_OPERATOR) operator = await startMetricsOperator();
    start = Math.floor(Date.now() / 1000);
    // one job per Service, named as the operator names them (<TaskService>-<service>); the operator in its own namespace
    targets = CLUSTER_SERVICES.map((name) => ({ job: `demo-${name}`, url: cluster.metricsUrl(name), labels: { namespace: NAMESPACE } }));
    if (operator) targets.push({ job: 'task-service-operator', url: operator.metricsUrl, labels: { namespace: 'operators' } });
    prom = await startPrometheus(targets, { scrapeSeconds: SCRAPE_SECONDS });
    traffic = await startTraffic(cluster.url, cluster.databaseUrl);
  }, 240_000);
  afterAll(async () => {
    await prom?.stop();
    await operator?.stop();
    await cluster?.stop();
    await traffic?.close();
  }, 60_000);

  it('every target of every panel returns data, errors and the operator included: the tasks service is stopped for a moment', async () => {
    await targetsUp(prom, targets.length);
    await steadyTraffic(traffic, 30);
    // An outage: creates find no tasks service (503, `unavailable` at the gateway's bus request),
    // over several scrapes: the scrape that first sees the new 503 series sees no increase yet.
    await cluster.kill('tasks');
    for (let i = 0; i < 12; i++) {
      expect((await traffic.call('POST', '/api/tasks', { title: 'nobody answers' })).status).toBe(503);
      await new Promise((r) => setTimeout(r, 400));
    }
    await cluster.start('tasks');
    await cluster.ready(120_000);
    await steadyTraffic(traffic, 10);
    await scraped(prom, traffic);
    const end = Math.floor(Date.now() / 1000);
    const { problems } = await checkEveryTarget(prom, start, end, NO_DATA_DISTRIBUTED);
    expect(problems).toEqual([]);
    // the outage shows where an operator looks for it
    expect(await peak(prom, 'Errors', 'A', start, end), '5xx ratio').toBeGreaterThan(0);
    expect(await peak(prom, 'Request errors by outcome', 'B', start, end), 'callers: unavailable').toBeGreaterThan(0);
    // per-service panels group by job: every service's own
    expect((await prom.labelValues('job', 'tasksvc_pg_pool_connections')).sort()).toEqual(CLUSTER_SERVICES.map((n) => `demo-${n}`).sort());
    const source = `six processes and NATS (tools/chaos/cluster.ts)${operator ? ', the operator against a kube-apiserver' : ''}, driven by tools/observability/dashboard.test.ts; the tasks service stopped for a moment`;
    const sizes = await render(prom, start, end, 'distributed', source, NO_DATA_DISTRIBUTED);
    if (process.env.DOCS_IMAGES === '1') {
      const docs = join(root, 'docs', 'images');
      mkdirSync(docs, { recursive: true });
      for (const [file, shot] of Object.keys(sizes).map((f, i) => [f, DOC_SHOTS[i]!] as const)) copyFileSync(file, join(docs, shot.name));
    }
  }, 300_000);
});
