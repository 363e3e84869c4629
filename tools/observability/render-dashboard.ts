import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { allPanels, DASHBOARD_PATH, legendOf, loadDashboard, substitute, type Dashboard, type GrafanaVars, type Panel } from './dashboard.ts';
import type { Series } from './prometheus.ts';

/**
 * Draws the Grafana dashboard without Grafana: every panel's own PromQL, run against a Prometheus
 * range API, as a simple SVG line chart placed by the panel's gridPos (Grafana's 24-column grid,
 * 30 px rows, 8 px gaps), one section per dashboard row, screenshotted with Chromium.
 *
 *   node tools/observability/render-dashboard.ts --prometheus http://127.0.0.1:9090 \
 *     [--minutes 15] [--namespace .*] [--scrape 15] [--out test-results/dashboard]
 *
 * Used by tools/observability/dashboard.test.ts for the pictures in docs/observability.md.
 */

export interface RangeQuery {
  queryRange(expr: string, start: number, end: number, stepSeconds: number): Promise<Series[]>;
}

export interface RenderOptions {
  start: number;
  end: number;
  namespace: string;
  scrapeSeconds: number;
  /** one line under the title: where the data came from */
  source: string;
  /** panels with no data here, by title, and why (shown in the empty panel) */
  noData?: Record<string, string>;
}

export const PAGE_WIDTH = 1200;
const PAD = 16;
const GAP = 8;
const ROW_PX = 30;
const COLORS = ['#73bf69', '#f2cc0c', '#8ab8ff', '#ff780a', '#f2495c', '#5794f2', '#b877d9', '#fade2a', '#37872d', '#ff9830'];

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function num(v: number): string {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(3)}k`;
  return `${+v.toPrecision(3)}`;
}

/** A value in the panel's unit, as Grafana would label it (the units this dashboard uses). */
export function formatValue(v: number, unit: string | undefined): string {
  switch (unit) {
    case 'reqps':
      return `${num(v)} req/s`;
    case 'ops':
      return `${num(v)} ops/s`;
    case 'percentunit':
      return `${+(v * 100).toPrecision(3)}%`;
    case 's':
      return v !== 0 && Math.abs(v) < 1 ? `${+(v * 1000).toPrecision(3)} ms` : `${num(v)} s`;
    case 'bytes': {
      const units = ['B', 'KiB', 'MiB', 'GiB'];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) {
        v /= 1024;
        i++;
      }
      return `${+v.toPrecision(3)} ${units[i]}`;
    }
    default:
      return num(v);
  }
}

/** 0, 1, 2, 5, 10, 20…: the step that puts about four gridlines under `max` (bytes: in KiB, MiB… as labelled). */
function niceStep(max: number, unit: string | undefined): number {
  const scale = unit === 'bytes' ? 1024 ** Math.max(0, Math.floor(Math.log(max) / Math.log(1024))) : 1;
  const raw = max / scale / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 2.5, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag * scale;
}

/**
 * The legend entries that fit two lines of the panel's width (about 6 px a character at 11 px),
 * the highest series first, then "+N more" for the rest.
 */
function legend(series: DrawnSeries[], width: number): { html: string; count: number } {
  const widthOf = (text: string) => 26 + 6 * text.length;
  const lines = [0, 0];
  const shown: string[] = [];
  let line = 0;
  for (const [i, s] of series.entries()) {
    const name = s.name.length > 48 ? `${s.name.slice(0, 47)}…` : s.name;
    const w = widthOf(name);
    if (lines[line]! + w > width && line === 0) line = 1;
    // the last line keeps room for "+N more" while entries remain after this one
    const reserve = i < series.length - 1 ? widthOf('+99 more') : 0;
    if (lines[line]! + w + (line === 1 ? reserve : 0) > width) break;
    lines[line]! += w;
    shown.push(`<span><i style="background:${COLORS[i % COLORS.length]}"></i>${esc(name || ' ')}</span>`);
  }
  const more = series.length - shown.length;
  return { html: shown.join('') + (more > 0 ? `<span>+${more} more</span>` : ''), count: shown.length };
}

export interface DrawnSeries {
  name: string;
  points: [number, number][];
}

/** One time-series panel as SVG: gridlines, a time axis, lines with a light fill (Grafana's fillOpacity 10). */
function chartSvg(series: DrawnSeries[], unit: string | undefined, w: number, h: number, range: { start: number; end: number; step: number }, empty: string | undefined): string {
  const { start, end, step: stepSeconds } = range;
  const left = 64;
  const bottom = 18;
  const plotW = w - left - 6;
  const plotH = h - bottom - 6;
  const finite = series.flatMap((s) => s.points.map(([, v]) => v));
  const max = finite.length ? Math.max(...finite) : 0;
  const min = finite.length ? Math.min(0, ...finite) : 0;
  const step = niceStep(max - min || 1, unit);
  const top = Math.ceil((max || step) / step) * step;
  const bottomV = Math.floor(min / step) * step;
  const x = (t: number) => left + ((t - start) / (end - start || 1)) * plotW;
  const y = (v: number) => 6 + plotH - ((v - bottomV) / (top - bottomV || 1)) * plotH;
  const out: string[] = [`<svg width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" xmlns="http://www.w3.org/2000/svg">`];
  for (let v = bottomV; v <= top + step / 2; v += step) {
    out.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid"/>`);
    out.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${esc(formatValue(v, unit))}</text>`);
  }
  const span = end - start;
  const tick = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].find((s) => span / s <= 6) ?? 3600;
  for (let t = Math.ceil(start / tick) * tick; t <= end; t += tick) {
    const label = new Date(t * 1000).toISOString().slice(11, tick >= 60 ? 16 : 19);
    out.push(`<text x="${x(t).toFixed(1)}" y="${h - 4}" text-anchor="middle">${label}</text>`);
  }
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    // a missing or non-finite sample breaks the line, as in Grafana
    const runs: [number, number][][] = [];
    let run: [number, number][] = [];
    let last = -Infinity;
    for (const p of s.points) {
      if (p[0] - last > 1.5 * stepSeconds && run.length) {
        runs.push(run);
        run = [];
      }
      run.push(p);
      last = p[0];
    }
    if (run.length) runs.push(run);
    for (const r of runs) {
      const d = r.map(([t, v], j) => `${j ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join('');
      // a light fill under a few lines; under many it only muddies them
      if (r.length > 1 && series.length <= 4) out.push(`<path d="${d}L${x(r.at(-1)![0]).toFixed(1)},${y(bottomV).toFixed(1)}L${x(r[0]![0]).toFixed(1)},${y(bottomV).toFixed(1)}Z" fill="${color}" fill-opacity="0.1" stroke="none"/>`);
      out.push(r.length > 1 ? `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.5"/>` : `<circle cx="${x(r[0]![0]).toFixed(1)}" cy="${y(r[0]![1]).toFixed(1)}" r="2" fill="${color}"/>`);
    }
  });
  if (!series.length) out.push(`<text x="${left + plotW / 2}" y="${6 + plotH / 2}" text-anchor="middle" class="nodata">${esc(empty ? `No data: ${empty}` : 'No data')}</text>`);
  out.push('</svg>');
  return out.join('');
}

/** Run each target of a panel over the range; NaN and ±Inf samples are left out (gaps). */
async function panelSeries(prom: RangeQuery, panel: Panel, vars: GrafanaVars, o: RenderOptions, step: number): Promise<DrawnSeries[]> {
  const out: DrawnSeries[] = [];
  for (const t of panel.targets ?? []) {
    for (const s of await prom.queryRange(substitute(t.expr, vars), o.start, o.end, step)) {
      const points = s.values.map(([ts, v]) => [ts, Number(v)] as [number, number]).filter(([, v]) => Number.isFinite(v));
      if (points.length) out.push({ name: legendOf(t.legendFormat, s.metric), points });
    }
  }
  const peak = (s: DrawnSeries) => Math.max(...s.points.map(([, v]) => v));
  return out.sort((a, b) => peak(b) - peak(a) || a.name.localeCompare(b.name));
}

/**
 * The dashboard as one HTML page: a header saying what this is, then a section per dashboard row
 * (`data-row` is the row's title) with its panels on the 24-column grid (`data-panel`: the title,
 * `data-series`: how many series with values it drew).
 */
export async function renderDashboardHtml(prom: RangeQuery, o: RenderOptions, dashboard: Dashboard = loadDashboard()): Promise<string> {
  const step = Math.max(1, Math.ceil((o.end - o.start) / 200));
  const vars: GrafanaVars = { namespace: o.namespace, intervalSeconds: step, scrapeSeconds: o.scrapeSeconds, rangeSeconds: o.end - o.start };
  const colW = (PAGE_WIDTH - 2 * PAD - 23 * GAP) / 24;
  const sections: { title: string; panels: string[] }[] = [];
  let rowY = -1;
  for (const panel of allPanels(dashboard)) {
    if (panel.type === 'row') {
      sections.push({ title: panel.title, panels: [] });
      rowY = panel.gridPos.y + 1;
      continue;
    }
    if (!sections.length) sections.push({ title: '', panels: [] });
    const { x, y, w, h } = panel.gridPos;
    const pw = w * colW + (w - 1) * GAP;
    const ph = h * ROW_PX + (h - 1) * GAP;
    const series = await panelSeries(prom, panel, vars, o, step);
    const legendH = series.length ? 32 : 0;
    const unit = panel.fieldConfig?.defaults?.unit;
    // the series drawn are those the legend names: the highest first, the rest counted as "+N more"
    const names = legend(series, pw - 12);
    const shown = series.slice(0, names.count);
    sections.at(-1)!.panels.push(
      `<div class="panel" data-panel="${esc(panel.title)}" data-series="${series.length}" style="grid-column:${x + 1} / span ${w};grid-row:${y - Math.max(0, rowY) + 1} / span ${h};height:${ph}px">` +
        `<div class="title">${esc(panel.title)}</div>${chartSvg(shown, unit, Math.floor(pw - 12), Math.floor(ph - 30 - legendH), { start: o.start, end: o.end, step }, o.noData?.[panel.title])}` +
        (legendH ? `<div class="legend">${names.html}</div>` : '') +
        `</div>`,
    );
  }
  const range = `${new Date(o.start * 1000).toISOString().slice(0, 19)} to ${new Date(o.end * 1000).toISOString().slice(11, 19)} UTC`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(dashboard.title)}</title><style>
body{margin:0;background:#111217;color:#ccccdc;font:13px/1.3 system-ui,sans-serif;width:${PAGE_WIDTH}px}
header{padding:${PAD}px ${PAD}px 4px}header h1{font-size:18px;margin:0 0 4px;color:#fff}header p{margin:2px 0;color:#9fa7b3}
section{padding:4px ${PAD}px ${PAD}px}section h2{font-size:15px;margin:8px 0;color:#fff}
.grid{display:grid;grid-template-columns:repeat(24,${colW}px);grid-auto-rows:${ROW_PX}px;gap:${GAP}px}
.panel{background:#181b1f;border:1px solid #2c3235;border-radius:3px;padding:4px 6px;box-sizing:border-box;overflow:hidden}
.title{font-weight:600;color:#fff;height:22px;line-height:22px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
svg text{fill:#9fa7b3;font-size:10px}svg .grid{stroke:#2c3235;stroke-width:1}svg .nodata{font-size:12px;fill:#ccccdc}
.legend{height:30px;line-height:15px;overflow:hidden;font-size:11px;display:flex;flex-wrap:wrap;gap:0 10px}.legend span{white-space:nowrap;max-width:100%;overflow:hidden;text-overflow:ellipsis}
.legend i{display:inline-block;width:12px;height:3px;margin:0 4px 3px 0;vertical-align:middle}
</style></head><body><header><h1>${esc(dashboard.title)}</h1>
<p>Not Grafana: a rendering of the dashboard's own queries (${esc(DASHBOARD_PATH.split('/').slice(-4).join('/'))}, uid ${esc(dashboard.uid)}) against Prometheus, drawn by tools/observability/render-dashboard.ts.</p>
<p>${esc(o.source)} · ${range} · namespace ${esc(o.namespace)}</p></header>
${sections.map((s) => `<section data-row="${esc(s.title)}"><h2>${esc(s.title)}</h2><div class="grid">${s.panels.join('')}</div></section>`).join('\n')}
</body></html>`;
}

/** Screenshot groups of dashboard rows (by row title) into PNG files; returns each file's size in bytes. */
export async function screenshotRows(html: string, shots: { file: string; rows: string[] }[], chromiumPath = '/usr/bin/chromium'): Promise<Record<string, number>> {
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  const sizes: Record<string, number> = {};
  try {
    // a short viewport: a full-page screenshot is then exactly as tall as the rows shown
    const page = await browser.newPage({ viewport: { width: PAGE_WIDTH, height: 200 } });
    await page.setContent(html);
    for (const shot of shots) {
      // the header and the chosen rows only: the others are hidden for this picture
      await page.evaluate((rows) => {
        for (const s of document.querySelectorAll('section')) (s).style.display = rows.includes(s.dataset.row ?? '') ? '' : 'none';
      }, shot.rows);
      const png = await page.screenshot({ fullPage: true });
      mkdirSync(join(shot.file, '..'), { recursive: true });
      writeFileSync(shot.file, png);
      sizes[shot.file] = png.length;
    }
  } finally {
    await browser.close();
  }
  return sizes;
}

/** The pictures in docs/observability.md: the dashboard's rows in five groups (each PNG well under 200 KB). */
export const DOC_SHOTS = [
  { name: 'dashboard-http.png', rows: ['HTTP (gateway)'] },
  { name: 'dashboard-bus.png', rows: ['Bus (per service)'] },
  { name: 'dashboard-pipelines.png', rows: ['Outbox', 'Webhooks and notifications', 'Cron'] },
  { name: 'dashboard-processes.png', rows: ['PostgreSQL pools and processes'] },
  { name: 'dashboard-operator.png', rows: ['Operator'] },
];

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { prometheus: { type: 'string' }, minutes: { type: 'string', default: '15' }, namespace: { type: 'string', default: '.*' }, scrape: { type: 'string', default: '15' }, out: { type: 'string', default: 'test-results/dashboard' } },
  });
  if (!values.prometheus) {
    process.stderr.write('usage: node tools/observability/render-dashboard.ts --prometheus http://127.0.0.1:9090 [--minutes 15] [--namespace .*] [--scrape 15] [--out DIR]\n');
    process.exit(2);
  }
  const base = values.prometheus.replace(/\/$/, '');
  const prom: RangeQuery = {
    async queryRange(expr, start, end, step) {
      const res = await fetch(`${base}/api/v1/query_range?${new URLSearchParams({ query: expr, start: String(start), end: String(end), step: String(step) })}`);
      const body = (await res.json()) as { status: string; error?: string; data: { result: Series[] } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
      return body.data.result;
    },
  };
  const end = Math.floor(Date.now() / 1000);
  const html = await renderDashboardHtml(prom, { start: end - Number(values.minutes) * 60, end, namespace: values.namespace, scrapeSeconds: Number(values.scrape), source: `Prometheus at ${base}` });
  mkdirSync(values.out, { recursive: true });
  writeFileSync(join(values.out, 'dashboard.html'), html);
  const sizes = await screenshotRows(
    html,
    DOC_SHOTS.map((s) => ({ file: join(values.out, s.name), rows: s.rows })),
  );
  for (const [file, bytes] of Object.entries(sizes)) process.stdout.write(`${file}: ${Math.round(bytes / 1024)} KiB\n`);
}
