/**
 * CalDAV sync benchmark: a first sync of a 10,000-task calendar (sync-collection with getetag and
 * calendar-data, as a client's first run fetches everything; and the etag listing alone, PROPFIND
 * depth 1), then incremental syncs after one change made through the REST API, on that calendar and
 * on one of 100 tasks in the same run (target: the incremental answer ≤ 50 ms, independent of the
 * calendar's size). Times are as a client on loopback sees them: the whole request through the
 * gateway, the bus and the tasks service, which is the server's time plus a loopback round trip.
 *
 *   node_modules/.bin/node tools/bench/caldav.ts [--tasks N] [--rounds R]
 *
 * One process (embedded mode, in-process bus), one PostgreSQL. Identity: the tasks tests' identity
 * TEST DOUBLE (a bearer `test-<uuid>` as the app password).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, startLocalPostgres } from '@tasksvc/runtime';
import { emitRows } from './lib/report.ts';
import { tasksUnderTest } from './lib/servers.ts';
import { median, percentile } from './lib/stats.ts';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '10000' }, rounds: { type: 'string', default: '30' } } });
const N = Number(values.tasks);
const ROUNDS = Number(values.rounds);
const SMALL = 100;

const sync = (token: string | null, props: string) =>
  `<?xml version="1.0" encoding="utf-8"?><d:sync-collection xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:sync-token>${token ?? ''}</d:sync-token><d:sync-level>1</d:sync-level><d:prop>${props}</d:prop></d:sync-collection>`;
const tokenOf = (xml: string) => /<d:sync-token>([^<]+)<\/d:sync-token>/.exec(xml)![1]!;
const count = (xml: string) => xml.split('<d:response>').length - 1;

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-caldav-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });

try {
  const running = await tasksUnderTest(pg.url, log);
  const system = running.system;
  const rows: (string | number)[][] = [];
  try {
    const users = [randomUUID(), randomUUID()];
    for (const [user, n] of [
      [users[0]!, N],
      [users[1]!, SMALL],
    ] as const) {
      // the profile first (a REST call makes it), then the tasks straight into the table
      await fetch(`${system.url}/api/settings/profile`, { headers: { authorization: `Bearer test-${user}` } });
      await system.pool.query(
        `INSERT INTO tasks.tasks (user_id, title, notes, type, priority, due_date) SELECT $1, 'Task ' || g, 'Notes for task ' || g, 'ONE_TIME', (ARRAY['HIGH','NORMAL','SOMEDAY'])[1 + g % 3], CASE WHEN g % 3 = 0 THEN DATE '2030-12-15' END FROM generate_series(1, $2::int) g`,
        [user, n],
      );
    }
    await system.pool.query('ANALYZE tasks.tasks');

    const dav = async (user: string, method: string, path: string, body: string, depth = '1') => {
      const t0 = performance.now();
      const res = await fetch(`${system.url}${path}`, { method, headers: { authorization: `Bearer test-${user}`, depth, 'content-type': 'application/xml' }, body });
      const text = await res.text();
      if (res.status !== 207) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
      return { ms: performance.now() - t0, text };
    };
    const inbox = (user: string) => `/dav/calendars/${user}/tasks/`;
    const [big, small] = users as [string, string];

    // first sync: everything, once warm-up, then measured
    await dav(big, 'REPORT', inbox(big), sync(null, '<d:getetag/>'));
    const first = await dav(big, 'REPORT', inbox(big), sync(null, '<d:getetag/><c:calendar-data/>'));
    if (count(first.text) !== N) throw new Error(`first sync listed ${count(first.text)} of ${N}`);
    rows.push([`first sync, ${N.toLocaleString('en')} tasks (sync-collection, getetag + calendar-data)`, Math.round(first.ms), '—', `${(first.text.length / 1024 / 1024).toFixed(1)} MiB`, '—']);
    const listing = await dav(big, 'PROPFIND', inbox(big), '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/></d:prop></d:propfind>');
    rows.push([`etag listing, ${N.toLocaleString('en')} tasks (PROPFIND depth 1)`, Math.round(listing.ms), '—', `${(listing.text.length / 1024 / 1024).toFixed(1)} MiB`, '—']);

    // the baseline, in the same run: one task read through the REST API (GET /api/tasks/:id)
    const one = (await system.pool.query<{ id: string }>('SELECT id FROM tasks.tasks WHERE user_id = $1 LIMIT 1', [big])).rows[0]!.id;
    const reads: number[] = [];
    for (let i = 0; i < ROUNDS + 5; i++) {
      const t0 = performance.now();
      const res = await fetch(`${system.url}/api/tasks/${one}`, { headers: { authorization: `Bearer test-${big}` } });
      await res.arrayBuffer();
      if (i >= 5) reads.push(performance.now() - t0);
    }
    reads.sort((a, b) => a - b);
    const baseline = median(reads);
    rows.push(['baseline: GET /api/tasks/:id (REST)', Math.round(baseline * 10) / 10, Math.round(percentile(reads, 95) * 10) / 10, '1 task', 1]);

    // incremental: one change through the REST API, then a sync from the last token
    for (const [user, n] of [
      [small, SMALL],
      [big, N],
    ] as const) {
      const ids = (await system.pool.query<{ id: string }>('SELECT id FROM tasks.tasks WHERE user_id = $1 LIMIT $2', [user, ROUNDS + 5])).rows.map((r) => r.id);
      let token = tokenOf((await dav(user, 'REPORT', inbox(user), sync(null, '<d:getetag/>'))).text);
      const times: number[] = [];
      for (let i = 0; i < ROUNDS + 5; i++) {
        const res = await fetch(`${system.url}/api/tasks/${ids[i]!}`, { method: 'PATCH', headers: { authorization: `Bearer test-${user}`, 'content-type': 'application/json' }, body: JSON.stringify({ title: `Changed ${i}` }) });
        if (res.status !== 200) throw new Error(`PATCH: ${res.status}`);
        const r = await dav(user, 'REPORT', inbox(user), sync(token, '<d:getetag/><c:calendar-data/>'));
        if (count(r.text) !== 1) throw new Error(`incremental sync listed ${count(r.text)}, expected 1`);
        token = tokenOf(r.text);
        if (i >= 5) times.push(r.ms); // the first five warm the statements up
      }
      times.sort((a, b) => a - b);
      rows.push([`incremental sync after one change, ${n.toLocaleString('en')} tasks`, Math.round(median(times) * 10) / 10, Math.round(percentile(times, 95) * 10) / 10, '1 task', Math.round((median(times) / baseline) * 100) / 100]);
    }
  } finally {
    await running.stop();
  }
  console.log(`CalDAV benchmark: Node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}; one process (gateway + tasks, in-process bus), one PostgreSQL.`);
  console.log(`Times in ms as a client on loopback sees them (median and p95 over ${ROUNDS} rounds for the incremental and baseline rows). Target: incremental ≤ 50 ms at any calendar size.\n`);
  emitRows('CalDAV sync', ['what', 'ms (median)', 'p95 ms', 'answer', 'ratio to the REST read'], rows);
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
