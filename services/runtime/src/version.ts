import { readFileSync } from 'node:fs';

/** The running image's version, from the root package manifest (the one the image is built from). */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** When this process started; pings report uptime from it. */
export const STARTED_AT = Date.now();
