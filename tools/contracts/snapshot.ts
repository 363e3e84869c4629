/**
 * Keep this release's contracts as a fixture (a release step, docs/releases.md):
 *
 *   node_modules/.bin/node tools/contracts/snapshot.ts            # the version in package.json
 *   node_modules/.bin/node tools/contracts/snapshot.ts 1.3.0
 *
 * writes proto/contracts/<version>.json. tools/contracts/compat.test.ts then holds every later
 * release to it: what this one sends must read in the later one, and the reverse.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES_DIR, formatFixture, snapshot } from './fixtures.ts';

const version = process.argv[2] ?? (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
  process.stderr.write(`not a release version: ${version}\n`);
  process.exit(2);
}
mkdirSync(FIXTURES_DIR, { recursive: true });
const fixture = snapshot(version);
const file = join(FIXTURES_DIR, `${version}.json`);
writeFileSync(file, formatFixture(fixture));
process.stdout.write(`${file}: ${Object.keys(fixture.contracts).length} contracts, ${Object.keys(fixture.schemas).length} schemas\n`);
