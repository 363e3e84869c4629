import { createHash } from 'node:crypto';
import { updateStatusRpc } from '@tasksvc/proto';
import type { Config } from '@tasksvc/runtime';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { GatewayDeps } from './deps.ts';
import { authorize, resolveIdentity } from './identity.ts';

/**
 * Server-rendered pages: the legal pages (/impressum, /datenschutz) and the crawler files
 * (/sitemap.xml, /robots.txt); plus the admin page's update status (GET /api/admin/update-status). They are rendered here, not by the single-page app, because they must
 * be readable without JavaScript and because they use the RUN-TIME configuration (the imprint
 * variables and PUBLIC_APP_URL), whereas the app bundle only knows the build-time public URL.
 */

const escapeMap: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Every configured value is operator input that ends up in HTML: escape all of it. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => escapeMap[c]!);
}

/** Addresses are usually written on several lines (or comma-separated in one env value). */
function multiline(value: string): string {
  return value
    .split(/\r?\n|\\n/)
    .map((l) => escapeHtml(l.trim()))
    .filter(Boolean)
    .join('<br>');
}

export interface Imprint {
  name: string;
  address: string;
  email: string;
  phone: string | undefined;
}

/** The required imprint variables that are missing; an empty list means the legal pages can render. */
export function missingImprint(config: Config): string[] {
  const missing: string[] = [];
  if (!config.PUBLIC_IMPRINT_NAME?.trim()) missing.push('PUBLIC_IMPRINT_NAME');
  if (!config.PUBLIC_IMPRINT_ADDRESS?.trim()) missing.push('PUBLIC_IMPRINT_ADDRESS');
  if (!config.PUBLIC_IMPRINT_EMAIL?.trim()) missing.push('PUBLIC_IMPRINT_EMAIL');
  return missing;
}

function imprintOf(config: Config): Imprint | null {
  if (missingImprint(config).length > 0) return null;
  return {
    name: config.PUBLIC_IMPRINT_NAME!.trim(),
    address: config.PUBLIC_IMPRINT_ADDRESS!.trim(),
    email: config.PUBLIC_IMPRINT_EMAIL!.trim(),
    phone: config.PUBLIC_IMPRINT_PHONE?.trim() || undefined,
  };
}

// Same palette as the app (ui/src/styles.css) so the legal pages do not look foreign; kept inline
// because these pages must work even when the UI bundle is not built.
const PAGE_CSS = `
:root{color-scheme:light dark;--bg:#f7f7fb;--fg:#17171c;--muted:#55556a;--card:#fff;--border:#d9d9e3;--accent:#4338ca;--warn-bg:#fff4d6;--warn-fg:#5c3d00}
@media (prefers-color-scheme:dark){:root{--bg:#111118;--fg:#ececf1;--muted:#a9a9bc;--card:#1b1b25;--border:#33334a;--accent:#a5b4fc;--warn-bg:#3b2e0a;--warn-fg:#ffe3a3}}
*{box-sizing:border-box}body{margin:0;font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
main{max-width:46rem;margin:0 auto;padding:1.5rem 1rem 3rem}a{color:var(--accent)}h1{font-size:1.75rem;line-height:1.25}h2{font-size:1.2rem;margin-top:2rem}
header{display:flex;gap:1rem;align-items:center;justify-content:space-between;flex-wrap:wrap;padding:.75rem 1rem;border-bottom:1px solid var(--border);background:var(--card)}
header a{font-weight:600;text-decoration:none}nav{display:flex;gap:1rem}
.card{background:var(--card);border:1px solid var(--border);border-radius:.75rem;padding:1rem 1.25rem}
.warning{background:var(--warn-bg);color:var(--warn-fg);border:1px solid currentColor;border-radius:.75rem;padding:1rem 1.25rem}.warning h2{margin-top:0}
code{font-family:ui-monospace,monospace;font-size:.95em;overflow-wrap:anywhere}address{font-style:normal}
`;

/** The pages' one inline stylesheet, allowed by its hash in the Content-Security-Policy (security-headers.ts). */
export const PAGE_CSS_HASH = `'sha256-${createHash('sha256').update(PAGE_CSS).digest('base64')}'`;

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="de">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Task Service</title>
<meta name="robots" content="index, follow">
<link rel="icon" href="/icon.svg" type="image/svg+xml">
<style>${PAGE_CSS}</style>
</head>
<body>
<header><a href="/">Task Service</a><nav aria-label="Rechtliches"><a href="/impressum">Impressum</a><a href="/datenschutz">Datenschutz</a></nav></header>
<main id="main">
${body}
</main>
</body>
</html>
`;
}

/** Shown instead of legal content: an operator must see what to set, a visitor that nothing is wrong with them. */
function configurationWarning(title: string, missing: string[]): string {
  return `<h1>${escapeHtml(title)}</h1>
<div class="warning" role="alert" data-testid="legal-config-warning">
<h2>Configuration warning: legal information missing</h2>
<p>This page cannot show legal content because the operator of this instance has not configured it.
Set the following environment variables and restart the service:</p>
<ul>${missing.map((v) => `<li><code>${v}</code></li>`).join('')}</ul>
<p>Optional: <code>PUBLIC_IMPRINT_PHONE</code>.</p>
<p lang="de">Konfigurationswarnung: Die Angaben zum Betreiber fehlen. Diese Seite zeigt erst nach der Konfiguration rechtliche Inhalte.</p>
</div>`;
}

function contactBlock(i: Imprint): string {
  const phone = i.phone ? `<br>Telefon: <a href="tel:${escapeHtml(i.phone.replace(/[^\d+]/g, ''))}">${escapeHtml(i.phone)}</a>` : '';
  return `<address class="card" data-testid="imprint">
<strong>${escapeHtml(i.name)}</strong><br>
${multiline(i.address)}<br>
E-Mail: <a href="mailto:${escapeHtml(i.email)}">${escapeHtml(i.email)}</a>${phone}
</address>`;
}

export function renderImpressum(config: Config): string {
  const i = imprintOf(config);
  if (!i) return layout('Impressum', configurationWarning('Impressum', missingImprint(config)));
  return layout(
    'Impressum',
    `<h1>Impressum</h1>
<p>Angaben gemäß § 5 DDG (Legal notice):</p>
${contactBlock(i)}
<h2>Verantwortlich für den Inhalt</h2>
<p>${escapeHtml(i.name)}, Anschrift wie oben.</p>
<h2>Haftung für Inhalte und Links</h2>
<p>Diese Instanz ist eine selbst betriebene Aufgabenverwaltung. Nutzerinnen und Nutzer sind für die von ihnen angelegten Inhalte selbst verantwortlich.
Für Inhalte externer Links sind ausschließlich deren Betreiber verantwortlich.</p>`,
  );
}

export function renderDatenschutz(config: Config): string {
  const i = imprintOf(config);
  if (!i) return layout('Datenschutzerklärung', configurationWarning('Datenschutzerklärung', missingImprint(config)));
  const app = escapeHtml(config.PUBLIC_APP_URL);
  return layout(
    'Datenschutzerklärung',
    `<h1>Datenschutzerklärung</h1>
<p>Privacy policy for <a href="${app}">${app}</a>.</p>
<h2>1. Verantwortlicher</h2>
${contactBlock(i)}
<h2>2. Welche Daten verarbeitet werden</h2>
<ul>
<li><strong>Anmeldung:</strong> Bei der Anmeldung über einen externen Identitätsanbieter erhalten wir Ihre Nutzerkennung und E-Mail-Adresse. Ein Sitzungs-Cookie hält Sie angemeldet; es ist technisch notwendig (Art. 6 Abs. 1 lit. b DSGVO, § 25 Abs. 2 TDDDG).</li>
<li><strong>Inhalte:</strong> Aufgaben, Themen, Erfolge, Statistiken und Einstellungen, die Sie anlegen, werden in der Datenbank dieser Instanz gespeichert, um den Dienst zu erbringen (Art. 6 Abs. 1 lit. b DSGVO).</li>
<li><strong>Sicherheit:</strong> Zweiter Faktor (TOTP-Geheimnis verschlüsselt, Passkeys als öffentliche Schlüssel), Sitzungen mit IP-Adresse und Browserkennung, damit Sie Ihre Sitzungen prüfen und beenden können (Art. 6 Abs. 1 lit. f DSGVO).</li>
<li><strong>Benachrichtigungen:</strong> Nur wenn Sie sie einrichten: Push-Abonnements, Kanal-Zugangsdaten und Webhook-Adressen. Nachrichten werden an die von Ihnen gewählten Dienste übermittelt.</li>
</ul>
<h2>3. Keine Weitergabe, kein Tracking</h2>
<p>Es gibt keine Werbung, keine Analyse- oder Tracking-Dienste und keine Weitergabe an Dritte, außer an die Anmelde- und Benachrichtigungsdienste, die Sie selbst wählen.</p>
<h2>4. Speicherdauer</h2>
<p>Daten bleiben gespeichert, bis Sie sie löschen oder Ihr Konto entfernen lassen. Zustellprotokolle werden auf die jüngsten Einträge begrenzt.</p>
<h2>5. Ihre Rechte</h2>
<p>Sie haben das Recht auf Auskunft, Berichtigung, Löschung, Einschränkung der Verarbeitung, Datenübertragbarkeit und Widerspruch (Art. 15–21 DSGVO) sowie das Recht auf Beschwerde bei einer Aufsichtsbehörde. Wenden Sie sich dazu an die oben genannte Adresse.</p>`,
  );
}

/** Pages a crawler may index. Everything else needs a session or is an API. */
const PUBLIC_PATHS = ['/', '/login', '/impressum', '/datenschutz'];

export function renderSitemap(publicUrl: string): string {
  const base = publicUrl.replace(/\/+$/, '');
  const urls = PUBLIC_PATHS.map((p) => `  <url><loc>${escapeHtml(base + p)}</loc></url>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls}\n</urlset>\n`;
}

export function renderRobots(publicUrl: string): string {
  const base = publicUrl.replace(/\/+$/, '');
  return ['User-agent: *', 'Allow: /', 'Disallow: /api/', 'Disallow: /admin', 'Disallow: /settings', 'Disallow: /setup/', '', `Sitemap: ${base}/sitemap.xml`, ''].join('\n');
}

/** Gateway extension: registers the server-rendered pages. */
export function registerPages(app: FastifyInstance, deps: GatewayDeps): void {
  const { config } = deps;
  const html = (render: (c: Config) => string) => async (_req: unknown, reply: FastifyReply) =>
    // Short cache: an operator who fixes the imprint variables should see the result after a restart.
    reply.type('text/html; charset=utf-8').header('cache-control', 'public, max-age=300').send(render(config));
  app.get('/impressum', html(renderImpressum));
  app.get('/datenschutz', html(renderDatenschutz));
  app.get('/sitemap.xml', async (_req, reply) => reply.type('application/xml; charset=utf-8').header('cache-control', 'public, max-age=3600').send(renderSitemap(config.PUBLIC_APP_URL)));
  // The admin page's update banner: the scheduler's last release check (admins only, like /admin).
  app.get('/api/admin/update-status', async (req, reply) => {
    const user = await resolveIdentity(req, deps.bus, config);
    authorize('admin', 'GET', user);
    const status = await deps.bus.request(updateStatusRpc, {}, { requestId: String(req.id), timeoutMs: 5_000 });
    return reply.header('cache-control', 'no-store').send(status);
  });
  app.get('/robots.txt', async (_req, reply) => reply.type('text/plain; charset=utf-8').header('cache-control', 'public, max-age=3600').send(renderRobots(config.PUBLIC_APP_URL)));
}
