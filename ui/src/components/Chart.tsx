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
      scales: { x: { time: false, range: [-0.5, xs.length - 0.5] } },
      axes: [
        {
          stroke: muted,
          grid: { show: false },
          ticks: { stroke: border },
          // At most ~12 labels, always on whole categories.
          splits: () => xs.filter((i) => i % Math.max(1, Math.ceil(xs.length / 12)) === 0),
          values: (_u, ticks) => ticks.map((t) => props.labels[t] ?? ''),
        },
        { stroke: muted, grid: { stroke: border, width: 1 }, ticks: { stroke: border } },
      ],
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
