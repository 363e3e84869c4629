import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
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

/** Text files worth compressing; images are already compressed. */
const COMPRESSIBLE = /\.(js|css|html|svg|json|webmanifest|txt|xml)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? filesUnder(join(dir, f)) : [join(dir, f)]));
}

/**
 * After the build: (1) write the service worker's precache list (every hashed asset plus the shell
 * and offline page) into sw.js, which also makes sw.js change with every build so browsers pick up
 * the new version; (2) write brotli (.br) and gzip (.gz) copies of every text file next to it, which
 * the gateway serves as they are (no compression per request); (3) report what the first screen
 * transfers compressed (index.html, its CSS and the initial JavaScript) in build-report.json.
 */
function precompressAndPrecache(): Plugin {
  let outDir = '';
  return {
    name: 'precompress-and-precache',
    apply: 'build',
    configResolved(c) {
      outDir = resolve(c.root, c.build.outDir);
    },
    closeBundle() {
      // A failed build (e.g. over budget) wrote nothing to post-process; its own error is the message.
      if (!existsSync(join(outDir, 'build-report.json'))) return;
      const rel = (f: string) => '/' + relative(outDir, f).split('\\').join('/');
      const files = filesUnder(outDir).filter((f) => !/\.(br|gz)$/.test(f));
      const precache = ['/offline.html', ...files.map(rel).filter((f) => f.startsWith('/assets/'))];
      const sw = join(outDir, 'sw.js');
      writeFileSync(sw, readFileSync(sw, 'utf8').replace(/const PRECACHE = \[[^\]]*\];/, `const PRECACHE = ${JSON.stringify(precache)};`));
      const sizes = new Map<string, number>();
      for (const f of files) {
        if (!COMPRESSIBLE.test(f) || f.endsWith('build-report.json')) continue;
        const data = readFileSync(f);
        const br = brotliCompressSync(data, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: data.length } });
        writeFileSync(`${f}.br`, br);
        writeFileSync(`${f}.gz`, gzipSync(data, { level: 9 }));
        sizes.set(rel(f), br.length);
      }
      const reportFile = join(outDir, 'build-report.json');
      const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { initialChunks: string[] };
      const html = readFileSync(join(outDir, 'index.html'), 'utf8');
      const css = [...html.matchAll(/href="(\/assets\/[^"]+\.css)"/g)].map((m) => m[1]!);
      const firstScreen = ['/index.html', ...css, ...report.initialChunks.map((c) => `/${c}`)];
      const firstScreenBrotliBytes = firstScreen.reduce((sum, f) => sum + (sizes.get(f) ?? 0), 0);
      writeFileSync(reportFile, JSON.stringify({ ...report, firstScreen, firstScreenBrotliBytes }, null, 2));
      console.info(`first screen transfers ${(firstScreenBrotliBytes / 1024).toFixed(1)} KB brotli (${firstScreen.length} files); ${sizes.size} files precompressed (.br, .gz)`);
    },
  };
}

export default defineConfig({
  root: import.meta.dirname,
  envPrefix: 'PUBLIC_',
  plugins: [solid(), initialJsBudget(), precompressAndPrecache()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: true,
  },
  server: { proxy: { '/api': 'http://localhost:3000', '/impressum': 'http://localhost:3000', '/datenschutz': 'http://localhost:3000' } },
});
