import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderBenchmarks, replaceSections, type Results } from './docs.ts';

const doc = readFileSync(new URL('../../docs/benchmarks.md', import.meta.url), 'utf8');
const noRun: Results = { at: '2026-01-01T00:00:00Z', node: 'v24', cores: 2, results: [] };

describe('docs/benchmarks.md is rendered by docs.ts', () => {
  it("its introduction is docs.ts's INTRO: text written by hand above '## Latest figures' would be dropped by the next render", () => {
    const intro = renderBenchmarks(noRun).split('\n## Latest figures')[0]!;
    expect(doc.split('\n## Latest figures')[0]).toBe(intro);
  });

  it("a subset's run replaces only its own section and keeps the others", () => {
    const before = `${renderBenchmarks(noRun)}\n### idle\n\nold idle\n\n### sizing\n\nold sizing\n`;
    const after = replaceSections(before, { ...noRun, results: [{ bench: 'idle', exitCode: 0, seconds: 1, output: 'new idle figures' }] });
    expect(after).toContain('new idle figures');
    expect(after).not.toContain('old idle');
    expect(after).toContain('### sizing\n\nold sizing');
  });
});
