import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { candidates, findPgTool, toolVersion } from './pg-tools.ts';

/**
 * Which pg_dump the backup uses, with the binaries this machine really has (Debian's postgresql-client
 * 15 at /usr/bin, the 18 that tools/backup/ensure-pg-dump.sh builds): never one older than the server,
 * and a clear error naming what to run or install when none fits.
 */
describe('findPgTool', () => {
  const all = candidates('pg_dump').map(toolVersion).filter((t) => t !== undefined);

  it.skipIf(all.length === 0)('takes the newest pg_dump of the wanted major or newer, the build cache first', () => {
    const newest = Math.max(...all.map((t) => t.major));
    const found = findPgTool('pg_dump', newest);
    expect(found.major).toBe(newest);
    // the first candidate of that major: the cache before Debian's directories and PATH
    expect(found.path).toBe(all.find((t) => t.major === newest)!.path);
    if (existsSync('/var/cache/task-service/pg18/bin/pg_dump')) expect(findPgTool('pg_dump', 18).path).toBe('/var/cache/task-service/pg18/bin/pg_dump');
  });

  it('refuses every pg_dump older than the server and says what to run or install', () => {
    let message = '';
    try {
      findPgTool('pg_dump', 99);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('pg_dump of PostgreSQL 99 or newer is needed');
    expect(message).toContain('tools/backup/ensure-pg-dump.sh');
    expect(message).toContain('postgresql-client-99');
    // what it did find is named, with where
    for (const t of all) expect(message).toContain(`${t.version} (${t.path})`);
    if (all.length === 0) expect(message).toContain('found none');
  });
});
