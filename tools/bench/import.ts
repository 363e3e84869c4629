/**
 * Import benchmark: 10,000 tasks brought in through the whole path (file as the HTTP body →
 * gateway → pieces over the bus → tasks service: read, preview; confirm: one transaction, progress
 * polled), for a Todoist CSV and an iCalendar file, against the baseline of the same 10,000 tasks
 * created one by one with POST /api/tasks by 8 concurrent callers, in the same run on the same
 * PostgreSQL. Memory: the process's resident set sampled every 20 ms while the import runs (peak,
 * and how far above the idle process it went), and V8's heap peak.
 *
 *   node_modules/.bin/node tools/bench/import.ts [--tasks N]
 *
 * One process (embedded mode, in-process bus): the service and the gateway share the RSS measured.
 * Identity: the tasks tests' identity TEST DOUBLE (a bearer `test-<uuid>`).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger, startLocalPostgres } from '@tasksvc/runtime';
import { tasksUnderTest } from './lib/servers.ts';
import { emitRows } from './lib/report.ts';
import { measure } from './lib/stats.ts';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '10000' } } });
const N = Number(values.tasks);
const PHRASES = ['', 'every monday', 'tomorrow', 'every 2 weeks', 'Jan 15 2030', 'every month on the 1st', ''];

function todoistCsv(n: number): string {
  const lines = ['TYPE,CONTENT,DESCRIPTION,PRIORITY,INDENT,AUTHOR,RESPONSIBLE,DATE,DATE_LANG,TIMEZONE,DURATION,DURATION_UNIT'];
  for (let i = 0; i < n; i++) {
    if (i % 500 === 0) lines.push(`section,Section ${i / 500},,,,,,,,,,`);
    const indent = i % 10 === 9 ? 2 : 1;
    lines.push(`task,"Task ${i}, with a comma","Notes for task ${i}",${(i % 4) + 1},${indent},Ada (1),,${PHRASES[i % PHRASES.length]},en,Europe/Berlin,${i % 3 === 0 ? '30' : ''},${i % 3 === 0 ? 'minute' : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

function icalendar(n: number): string {
  const out = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//bench//EN'];
  for (let i = 0; i < n; i++) {
    out.push('BEGIN:VTODO', `UID:bench-${i}@bench.test`, 'DTSTAMP:20261201T080000Z', `SUMMARY:Task ${i}`, `DESCRIPTION:Notes for task ${i}`, `PRIORITY:${(i % 9) + 1}`);
    if (i % 3 === 0) out.push('DUE;VALUE=DATE:20301215');
    if (i % 7 === 0) out.push('DUE;VALUE=DATE:20301207', 'RRULE:FREQ=WEEKLY;BYDAY=MO');
    if (i % 5 === 0) out.push(`CATEGORIES:Topic ${i % 20}`);
    out.push('END:VTODO');
  }
  out.push('END:VCALENDAR');
  return `${out.join('\r\n')}\r\n`;
}

const log = createLogger('bench', 'silent');
const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
const pg = await startLocalPostgres({ dataDir: join(dir, 'pg'), log });

/** Peak RSS and heap while `work` runs, sampled every 20 ms. */
async function peakDuring<T>(work: () => Promise<T>): Promise<{ result: T; idleRss: number; peakRss: number; peakHeap: number }> {
  globalThis.gc?.();
  const idleRss = process.memoryUsage().rss;
  let peakRss = idleRss;
  let peakHeap = process.memoryUsage().heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 20);
  try {
    const result = await work();
    return { result, idleRss, peakRss, peakHeap };
  } finally {
    clearInterval(timer);
  }
}

const MiB = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;

try {
  const { system, stop } = await tasksUnderTest(pg.url, log);
  const rows: (string | number)[][] = [];
  try {
    // baseline: the same number of tasks, one POST each
    const baseUser = randomUUID();
    const headers = { authorization: `Bearer test-${baseUser}`, 'content-type': 'application/json' };
    await measure(50, 4, async (i) => (await fetch(`${system.url}/api/tasks`, { method: 'POST', headers, body: JSON.stringify({ title: `Warm ${i}` }) })).arrayBuffer());
    const base = await peakDuring(async () => {
      const t0 = performance.now();
      await measure(N, 8, async (i) => {
        const res = await fetch(`${system.url}/api/tasks`, { method: 'POST', headers, body: JSON.stringify({ title: `Task ${i}`, notes: `Notes for task ${i}`, dueDate: '2030-01-15' }) });
        if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      });
      return performance.now() - t0;
    });
    rows.push([`${N.toLocaleString('en')} × POST /api/tasks (8 callers)`, '—', '—', Math.round(base.result), 1, MiB(base.peakRss), MiB(base.peakRss - base.idleRss), MiB(base.peakHeap)]);

    for (const [label, name, body] of [
      ['Todoist CSV', 'bench.csv', todoistCsv(N)],
      ['iCalendar (VTODO)', 'bench.ics', icalendar(N)],
    ] as const) {
      const user = randomUUID();
      const auth = { authorization: `Bearer test-${user}` };
      const run = await peakDuring(async () => {
        const t0 = performance.now();
        const up = await fetch(`${system.url}/api/user/import?filename=${name}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/octet-stream' }, body });
        const view = ((await up.json()) as { import: { id: string } }).import;
        if (up.status !== 201) throw new Error(`${label} upload: ${up.status} ${JSON.stringify(view)}`);
        const t1 = performance.now();
        const confirm = await fetch(`${system.url}/api/user/import/${view.id}/confirm`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
        if (confirm.status !== 202) throw new Error(`${label} confirm: ${confirm.status} ${await confirm.text()}`);
        for (;;) {
          const r = (await (await fetch(`${system.url}/api/user/import/${view.id}`, { headers: auth })).json()) as { import: { status: string; error: string | null } };
          if (r.import.status === 'done') break;
          if (r.import.status !== 'running') throw new Error(`${label}: ${r.import.status} ${r.import.error}`);
          await new Promise((res) => setTimeout(res, 50));
        }
        return { preview: t1 - t0, total: performance.now() - t0 };
      });
      const count = ((await (await fetch(`${system.url}/api/tasks?limit=1`, { headers: auth })).json()) as { total: number }).total;
      if (count !== N) throw new Error(`${label}: ${count} tasks imported, expected ${N}`);
      rows.push([`${N.toLocaleString('en')} tasks, ${label} (${MiB(body.length)} MiB)`, Math.round(run.result.preview), Math.round(run.result.total - run.result.preview), Math.round(run.result.total), Math.round((run.result.total / base.result) * 100) / 100, MiB(run.peakRss), MiB(run.peakRss - run.idleRss), MiB(run.peakHeap)]);
    }
  } finally {
    await stop();
  }
  console.log(`Import benchmark: Node ${process.version}, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}; one process (gateway + tasks, in-process bus), one PostgreSQL.`);
  console.log('Times in ms; "ratio" is the whole import against the baseline of one POST per task; memory of the whole process, sampled every 20 ms.\n');
  emitRows('Import of 10,000 tasks', ['what', 'upload + preview ms', 'confirm → done ms', 'total ms', 'ratio', 'peak RSS MiB', 'RSS above idle MiB', 'peak heap MiB'], rows);
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
