import { onCleanup, onMount, type JSX } from 'solid-js';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * A bar/line chart with uPlot (the chart library; loaded only with the statistics route). It follows
 * the container's width, so it never overflows on a phone, and reads colours from the theme tokens.
 */
export function Chart(props: { labels: string[]; series: { label: string; values: number[]; bars?: boolean }[]; height?: number; title: string }): JSX.Element {
  let el!: HTMLDivElement;
  let plot: uPlot | undefined;
  onMount(() => {
    const css = getComputedStyle(document.documentElement);
    const accent = css.getPropertyValue('--accent').trim() || '#4338ca';
    const muted = css.getPropertyValue('--muted').trim() || '#555';
    const border = css.getPropertyValue('--border').trim() || '#ddd';
    const xs = props.labels.map((_, i) => i);
    const palette = [accent, '#d97706', '#059669'];
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: props.height ?? 220,
      legend: { show: props.series.length > 1 },
      cursor: { drag: { x: false, y: false } },
      // Categories sit on whole numbers with half a slot of room either side, so every bar is whole.
      scales: {
        x: { time: false, range: [-0.5, xs.length - 0.5] },
        // A bar's height is read against 0: the axis always starts there (uPlot would start near the smallest value).
        y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
      },
      axes: [
        {
          stroke: muted,
          grid: { show: false },
          ticks: { stroke: border },
          // As many labels as fit (about 60 px each, so "25 Nov" never collides on a phone), always on whole categories.
          splits: (u) => {
            const fit = Math.max(2, Math.floor(u.bbox.width / devicePixelRatio / 60));
            const step = Math.max(1, Math.ceil(xs.length / fit));
            return xs.filter((i) => (xs.length - 1 - i) % step === 0); // the newest category always labelled
          },
          values: (_u, ticks) => {
            const labels = ticks.map((t) => props.labels[t] ?? '');
            el.dataset.xLabels = labels.join('|'); // what is drawn, for the tests: the canvas has no text
            return labels;
          },
        },
        // Counts: whole-number steps only.
        { stroke: muted, grid: { stroke: border, width: 1 }, ticks: { stroke: border }, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
      ],
      hooks: {
        draw: [
          (u) => {
            el.dataset.yMin = String(u.scales.y!.min);
            el.dataset.yMax = String(u.scales.y!.max);
          },
        ],
      },
      series: [
        {},
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: palette[i % palette.length],
          fill: s.bars ? palette[i % palette.length] + '99' : undefined,
          width: s.bars ? 0 : 2,
          paths: s.bars ? uPlot.paths.bars!({ size: [0.7, 40] }) : undefined,
          points: { show: !s.bars },
        })),
      ],
    };
    plot = new uPlot(opts, [xs, ...props.series.map((s) => s.values)] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => plot?.setSize({ width: Math.max(200, el.clientWidth), height: props.height ?? 220 }));
    ro.observe(el);
    onCleanup(() => {
      ro.disconnect();
      plot?.destroy();
    });
  });
  return <div class="chart" ref={el} role="img" aria-label={props.title} />;
}
