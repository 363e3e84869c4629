import { readFileSync } from 'node:fs';

/** The Grafana dashboard the chart ships (docs/observability.md, "Dashboard"). */
export const DASHBOARD_PATH = new URL('../../charts/task-service-operator/dashboards/task-service.json', import.meta.url).pathname;

export interface GridPos {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Target {
  expr: string;
  legendFormat?: string;
  refId: string;
}

export interface Panel {
  type: string;
  title: string;
  description?: string;
  gridPos: GridPos;
  targets?: Target[];
  fieldConfig?: { defaults?: { unit?: string } };
  /** a collapsed row keeps its panels here */
  panels?: Panel[];
}

export interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown; allValue?: string }[] };
}

export function loadDashboard(path = DASHBOARD_PATH): Dashboard {
  return JSON.parse(readFileSync(path, 'utf8')) as Dashboard;
}

/** Every panel in layout order (top to bottom, left to right), rows included, collapsed rows opened. */
export function allPanels(d: Dashboard): Panel[] {
  return d.panels.flatMap((p) => [p, ...(p.panels ?? [])]).sort((a, b) => a.gridPos.y - b.gridPos.y || a.gridPos.x - b.gridPos.x);
}

/** The values Grafana would put in for its variables. */
export interface GrafanaVars {
  /** the dashboard's `namespace` variable: one selected namespace, or `.*` for All */
  namespace: string;
  /** the query's step (`$__interval`) */
  intervalSeconds: number;
  /** the data source's scrape interval */
  scrapeSeconds: number;
  /** the time range (`$__range`) */
  rangeSeconds: number;
}

/**
 * An expression as Grafana sends it: `$__rate_interval` is max(`$__interval` + scrape interval,
 * 4 × scrape interval), Grafana's own rule; `$namespace` is the selected value. A variable this
 * dashboard does not define is an error, not left in the query.
 */
export function substitute(expr: string, v: GrafanaVars): string {
  const values: Record<string, string> = {
    __rate_interval: `${Math.max(v.intervalSeconds + v.scrapeSeconds, 4 * v.scrapeSeconds)}s`,
    __interval: `${v.intervalSeconds}s`,
    __range: `${v.rangeSeconds}s`,
    namespace: v.namespace,
  };
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced: string | undefined, plain: string | undefined) => {
    const name = (braced ?? plain)!;
    const value = values[name];
    if (value === undefined) throw new Error(`unknown Grafana variable ${whole} in ${expr}`);
    return value;
  });
}

/** A legend entry: `{{route}}` from the series' labels (Grafana's legendFormat); the labels themselves when there is none. */
export function legendOf(format: string | undefined, labels: Record<string, string>): string {
  if (!format) return `{${Object.entries(labels).map(([k, val]) => `${k}="${val}"`).join(', ')}}`;
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_m, k: string) => labels[k] ?? '');
}
