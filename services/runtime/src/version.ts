import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string; repository?: unknown };

/** The running image's version, from the root package manifest (the one the image is built from). */
export const VERSION: string = manifest.version;

/** When this process started; pings report uptime from it. */
export const STARTED_AT = Date.now();

/**
 * The release listing of the repository a manifest names (`"owner/repo"`, `"github:owner/repo"` or
 * `{ "url": "https://github.com/owner/repo.git" }`): GitHub's releases API. Null when it names none,
 * so the update check never asks about a package that belongs to someone else.
 */
export function releaseListingUrl(repository: unknown): string | null {
  const raw = typeof repository === 'string' ? repository : repository && typeof repository === 'object' ? (repository as { url?: unknown }).url : undefined;
  if (typeof raw !== 'string') return null;
  const m = /^(?:github:|(?:git\+)?https:\/\/github\.com\/|git@github\.com:)?([\w.-]+)\/([\w.-]+?)(?:\.git)?\/?$/.exec(raw.trim());
  return m ? `https://api.github.com/repos/${m[1]}/${m[2]}/releases` : null;
}

/** This project's own release listing (from the root manifest's `repository`), or null. */
export const PROJECT_RELEASES_URL = releaseListingUrl(manifest.repository);
