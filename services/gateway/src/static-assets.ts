import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** Vite names every built file under /assets/ by its content hash (a precompressed copy adds .br/.gz), so a URL there never changes content. */
const HASHED = /[/\\]assets[/\\][^/\\]+-[\w-]{8,}(\.\w+)+$/;

/**
 * The built UI: precompressed copies (`.br`, `.gz`, written by the UI build) are sent as they are to
 * browsers that accept them, hashed files are cached for a year as immutable, and everything else
 * (index.html, sw.js, the manifest) is revalidated on every use so a deploy shows at once.
 */
export async function registerStaticAssets(app: FastifyInstance, uiDir: string): Promise<void> {
  await app.register(fastifyStatic, {
    root: uiDir,
    prefix: '/',
    wildcard: false,
    index: ['index.html'],
    preCompressed: true,
    cacheControl: false,
    setHeaders(res, path) {
      void res.header('cache-control', HASHED.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}
