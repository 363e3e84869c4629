import { gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';
import solid from 'vite-plugin-solid';

/**
 * PUBLIC_APP_URL is inlined at BUILD time (spec, Versioning): into the bundle as
 * import.meta.env.PUBLIC_APP_URL and into index.html's Open Graph and JSON-LD through %PUBLIC_APP_URL%.
 * Only `PUBLIC_*` variables reach the client (envPrefix), so server secrets can never be bundled.
 */
const DEFAULT_PUBLIC_APP_URL = 'http://localhost:3000';
process.env.PUBLIC_APP_URL = (process.env.PUBLIC_APP_URL || DEFAULT_PUBLIC_APP_URL).replace(/\/+$/, '');

/** Gzipped budget for the JavaScript the first screen needs (entry chunk plus its static imports); 60 KB (UI_INITIAL_JS_BUDGET_KB only lets the build test prove the check fails). */
export const INITIAL_JS_BUDGET_BYTES = Number(process.env.UI_INITIAL_JS_BUDGET_KB || 60) * 1024;

/**
 * Report the initial JavaScript (what index.html loads before any route chunk) and fail the build
 * when it exceeds the budget. Route chunks are lazy, so only the shell, router and API client count.
 */
function initialJsBudget(budget = INITIAL_JS_BUDGET_BYTES): Plugin {
  return {
    name: 'initial-js-budget',
    apply: 'build',
    generateBundle(_opts, bundle) {
      const chunks = Object.values(bundle).filter((o) => o.type === 'chunk');
      const byName = new Map(chunks.map((c) => [c.fileName, c]));
      const initial = new Set<string>();
      const visit = (name: string) => {
        if (initial.has(name)) return;
        initial.add(name);
        for (const dep of byName.get(name)?.imports ?? []) visit(dep);
      };
      for (const c of chunks) if (c.isEntry) visit(c.fileName);
      let total = 0;
      const lines: string[] = [];
      for (const name of initial) {
        const size = gzipSync(byName.get(name)!.code, { level: 9 }).length;
        total += size;
        lines.push(`  ${name}  ${(size / 1024).toFixed(1)} KB gz`);
      }
      const lazy = chunks.length - initial.size;
      const summary = `initial JavaScript: ${(total / 1024).toFixed(1)} KB gzipped (budget ${(budget / 1024).toFixed(0)} KB) in ${initial.size} chunk(s); ${lazy} lazy chunk(s)`;
      this.info(`\n${lines.join('\n')}\n${summary}`);
      // Machine-readable report for tests and CI.
      this.emitFile({ type: 'asset', fileName: 'build-report.json', source: JSON.stringify({ initialJsGzipBytes: total, budgetBytes: budget, initialChunks: [...initial], lazyChunks: lazy }, null, 2) });
      if (total > budget) this.error(`${summary}: over budget. Split the route that grew (lazy()) or drop a dependency.`);
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  envPrefix: 'PUBLIC_',
  plugins: [solid(), initialJsBudget()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: { proxy: { '/api': 'http://localhost:3000', '/impressum': 'http://localhost:3000', '/datenschutz': 'http://localhost:3000' } },
});
