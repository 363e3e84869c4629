import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UI_DIR } from './support.ts';

/**
 * The production build: typechecked, PUBLIC_APP_URL inlined at build time (spec, Versioning), and
 * the initial-JavaScript budget enforced. Builds go to temporary folders, never to ui/dist.
 */
const outDirs: string[] = [];
afterAll(() => {
  for (const d of outDirs) rmSync(d, { recursive: true, force: true });
});

function build(env: Record<string, string>): { status: number | null; output: string; outDir: string } {
  const outDir = mkdtempSync(join(tmpdir(), 'ui-build-'));
  outDirs.push(outDir);
  const r = spawnSync(join(UI_DIR, 'node_modules/.bin/vite'), ['build', '--outDir', outDir, '--emptyOutDir'], { cwd: UI_DIR, encoding: 'utf8', env: { ...process.env, NODE_ENV: 'production', ...env } });
  return { status: r.status, output: `${r.stdout}\n${r.stderr}`, outDir };
}

describe('UI build', () => {
  it('typechecks (strict, against the proto contract types)', () => {
    const r = spawnSync(join(UI_DIR, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: UI_DIR, encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 240_000);

  it('inlines the build-time PUBLIC_APP_URL into Open Graph, JSON-LD and the bundle, reports the initial JS under budget, and bundles no zod', () => {
    const { status, output, outDir } = build({ PUBLIC_APP_URL: 'https://tasks.example.org/' });
    expect(status, output).toBe(0);
    const html = readFileSync(join(outDir, 'index.html'), 'utf8');
    expect(html).toContain('<meta property="og:url" content="https://tasks.example.org/" />');
    expect(html).toContain('"url":"https://tasks.example.org/"');
    expect(html).toContain('<link rel="canonical" href="https://tasks.example.org/" />');
    expect(html).not.toContain('%PUBLIC_APP_URL%');
    expect(html).not.toContain('localhost');
    expect(output).toMatch(/initial JavaScript: [\d.]+ KB gzipped \(budget 60 KB\)/);
    const report = JSON.parse(readFileSync(join(outDir, 'build-report.json'), 'utf8')) as { initialJsGzipBytes: number; budgetBytes: number; lazyChunks: number; initialChunks: string[] };
    expect(report.budgetBytes).toBe(60 * 1024);
    expect(report.initialJsGzipBytes).toBeGreaterThan(1024);
    expect(report.initialJsGzipBytes).toBeLessThanOrEqual(report.budgetBytes);
    // Route-level splitting: the screens are separate chunks, loaded on navigation.
    expect(report.lazyChunks).toBeGreaterThanOrEqual(10);
    // The production build of Solid, not its development build (vitest runs with NODE_ENV=test).
    expect(report.initialChunks.join(' ')).not.toMatch(/\bdev-/);
    // The PWA pieces are in the build.
    const files = readdirSync(outDir);
    expect(files).toEqual(expect.arrayContaining(['manifest.webmanifest', 'sw.js', 'icon.svg', 'offline.html']));
    // Precompressed copies the gateway sends as they are, and what the first screen transfers.
    const first = JSON.parse(readFileSync(join(outDir, 'build-report.json'), 'utf8')) as { firstScreen: string[]; firstScreenBrotliBytes: number };
    for (const f of first.firstScreen) for (const ext of ['.br', '.gz']) expect(readdirSync(join(outDir, f, '..')), f + ext).toContain(f.split('/').pop()! + ext);
    // What the first screen costs over the wire (compressed), for the log of every run.
    console.info(`first screen (${first.firstScreen.join(', ')}): ${first.firstScreenBrotliBytes} bytes brotli-compressed; initial JavaScript ${report.initialJsGzipBytes} bytes gzipped (budget ${report.budgetBytes})`);
    expect(first.firstScreenBrotliBytes).toBeGreaterThan(1024);
    expect(first.firstScreenBrotliBytes).toBeLessThan(report.budgetBytes);
    // The service worker precaches every route chunk of this build.
    const sw = readFileSync(join(outDir, 'sw.js'), 'utf8');
    const precache = JSON.parse(/const PRECACHE = (\[[^\]]*\]);/.exec(sw)![1]!) as string[];
    expect(precache.filter((f) => f.endsWith('.js')).length).toBeGreaterThan(report.lazyChunks);
    // The HTTP client is typed from proto's route table by type-only imports (lib/api.ts): no chunk,
    // initial or lazy, holds zod. Its class names survive minification as strings ("$ZodType").
    const chunks = readdirSync(outDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    expect(chunks.length).toBeGreaterThan(report.lazyChunks);
    for (const f of chunks) expect(readFileSync(join(outDir, f), 'utf8'), f).not.toMatch(/\$Zod[A-Z]|ZodError/);
  }, 180_000);

  it('fails the build when the initial JavaScript exceeds the budget', () => {
    const { status, output } = build({ UI_INITIAL_JS_BUDGET_KB: '5' });
    expect(status).not.toBe(0);
    expect(output).toMatch(/over budget/);
  }, 180_000);
});
