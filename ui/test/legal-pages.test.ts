import { buildGateway } from '../../services/gateway/src/index.ts';
import { createMemoryBus, createPool, type Config } from '../../services/runtime/src/index.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { quietLogger, testConfig } from '../../tools/testenv/index.ts';

/**
 * The server-rendered pages over plain HTTP (no JavaScript): what a crawler, a lawyer's checker or
 * the acceptance test sees. The gateway runs on a real port; the pool is never queried by these pages.
 */
// The gateway's type, named without importing fastify (not a dependency of the UI package).
let app: Awaited<ReturnType<typeof buildGateway>> | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function serve(overrides: Record<string, string | undefined>): Promise<{ base: string; config: Config }> {
  const config = testConfig(overrides);
  const log = quietLogger();
  const pool = createPool(config.DATABASE_URL, log, { max: 1, application: 'legal-test' });
  app = await buildGateway({ config, bus: createMemoryBus(log), pool, log });
  app.addHook('onClose', async () => pool.end());
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { base: address, config };
}

const IMPRINT = {
  PUBLIC_IMPRINT_NAME: 'Erika <b>Mustermann</b> & Söhne',
  PUBLIC_IMPRINT_ADDRESS: 'Musterstraße 1\n12345 Musterstadt',
  PUBLIC_IMPRINT_EMAIL: 'kontakt@example.org',
  PUBLIC_IMPRINT_PHONE: '+49 30 1234567',
};

describe('legal pages (server-rendered)', () => {
  it('renders /impressum and /datenschutz from the imprint variables, HTML-escaped', async () => {
    const { base } = await serve(IMPRINT);
    for (const path of ['/impressum', '/datenschutz']) {
      const res = await fetch(base + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain('Erika &lt;b&gt;Mustermann&lt;/b&gt; &amp; Söhne');
      expect(html).not.toContain('<b>Mustermann</b>');
      expect(html).toContain('Musterstraße 1<br>12345 Musterstadt');
      expect(html).toContain('mailto:kontakt@example.org');
      expect(html).toContain('+49 30 1234567');
      expect(html).not.toMatch(/configuration warning/i);
    }
  });

  it('shows a configuration warning naming the missing variables when the required ones are unset', async () => {
    const { base } = await serve({ PUBLIC_IMPRINT_NAME: 'Only A Name', PUBLIC_IMPRINT_PHONE: '+49 1' });
    for (const path of ['/impressum', '/datenschutz']) {
      const res = await fetch(base + path);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toMatch(/configuration warning/i);
      expect(html).toContain('PUBLIC_IMPRINT_ADDRESS');
      expect(html).toContain('PUBLIC_IMPRINT_EMAIL');
      // No half-filled legal content: the name that is set must not appear as if it were an imprint.
      expect(html).not.toContain('Only A Name');
      expect(html).not.toContain('data-testid="imprint"');
    }
  });

  it('the phone number is optional', async () => {
    const { base } = await serve({ ...IMPRINT, PUBLIC_IMPRINT_PHONE: undefined });
    const html = await (await fetch(`${base}/impressum`)).text();
    expect(html).toContain('data-testid="imprint"');
    expect(html).not.toContain('tel:');
  });

  it('sitemap.xml and robots.txt use the run-time PUBLIC_APP_URL', async () => {
    const { base } = await serve({ PUBLIC_APP_URL: 'https://tasks.example.net/' });
    const sitemap = await fetch(`${base}/sitemap.xml`);
    expect(sitemap.status).toBe(200);
    expect(sitemap.headers.get('content-type')).toMatch(/xml/);
    const xml = await sitemap.text();
    expect(xml).toContain('<loc>https://tasks.example.net/</loc>');
    expect(xml).toContain('<loc>https://tasks.example.net/impressum</loc>');
    expect(xml).not.toContain('localhost');

    const robots = await fetch(`${base}/robots.txt`);
    expect(robots.status).toBe(200);
    const txt = await robots.text();
    expect(txt).toContain('Sitemap: https://tasks.example.net/sitemap.xml');
    expect(txt).toMatch(/^Disallow: \/api\/$/m);
  });
});
