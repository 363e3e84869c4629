import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, createPool } from '@tasksvc/runtime';
import type { ServiceName } from '@tasksvc/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../testenv/wait.ts';
import { createUserWithApiKey } from '../testenv/users.ts';
import { startCluster, type Cluster } from './cluster.ts';
import { previousRelease } from './previous-release.ts';

/**
 * Mixed versions (issue 54 #3, docs/upgrading.md "How the mixed-version test works"): the previous
 * release and HEAD run side by side in the distributed mode under steady load, with a webhook and
 * reminders configured. The previous release (previous-release.ts: the last release tag before HEAD,
 * or with no tag yet the parent of the last contract change) is checked out from git history into a
 * worktree of its own and installed with the same pinned pnpm.
 *
 * All six services start on the old release (which migrates the empty database as it would have);
 * then, one service at a time with a clean stop (SIGTERM) as a roll does:
 *   1. consumers first: webhook, notifier, scheduler → HEAD (the producers still old);
 *   2. downgrade: the same three back to the old release, one at a time (old code on HEAD's schema);
 *   3. producers first: tasks, auth, gateway → HEAD, then webhook, notifier, scheduler.
 * Counted at the end: every task event of an acknowledged or committed write at the webhook receiver (deduplicated by event
 * and task id), every due reminder at the owner's HTTP Alert channel, 5xx outside a restart window
 * (docs: only a 503 while a restarted process's replacement starts), and parked events in every
 * schema's dead_letters table. One event lost or one parked fails the test.
 */

const root = new URL('../..', import.meta.url).pathname;
const PNPM = 'pnpm@12.21.0';
const CONSUMERS: ServiceName[] = ['webhook', 'notifier', 'scheduler'];
const PRODUCERS: ServiceName[] = ['tasks', 'auth', 'gateway'];
/** a reminder due this far after its task's creation: several restarts happen between the two */
const REMINDER_LEAD_MS = 4_000;

const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();

interface Receiver {
  server: Server;
  url: string;
  /** `event task-id` of every webhook delivery */
  events: Set<string>;
  /** titles of reminders that reached the HTTP Alert channel */
  reminders: Set<string>;
}

function startReceiver(): Promise<Receiver> {
  const events = new Set<string>();
  const reminders = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { event?: string; task?: { id: string }; tag?: string; title?: string; body?: string };
      if (req.url === '/hook' && body.task) events.add(`${body.event} ${body.task.id}`);
      if (req.url === '/alert' && body.tag === 'reminder') reminders.add(`${body.title} ${body.body}`);
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, events, reminders })));
}

describe('mixed versions: the previous release and HEAD side by side', () => {
  let oldCommit: string;
  let oldLabel: string;
  let oldDir: string;
  let oldRoot: string;
  let cluster: Cluster;
  let receiver: Receiver;
  let authorization: string;

  beforeAll(async () => {
    ({ commit: oldCommit, label: oldLabel } = previousRelease(root));
    oldDir = mkdtempSync(join(tmpdir(), 'mixed-version-'));
    oldRoot = join(oldDir, 'src');
    // an earlier run killed before its afterAll left a worktree entry whose folder is gone
    git('worktree', 'prune');
    git('worktree', 'add', '--detach', oldRoot, oldCommit);
    const t0 = performance.now();
    // from the pnpm store when it holds everything (the usual case: one lockfile apart), else fetched
    const install = (offline: boolean) => spawnSync('npx', ['-y', PNPM, 'install', '--frozen-lockfile', ...(offline ? ['--offline'] : [])], { cwd: oldRoot, encoding: 'utf8' });
    let installed = install(true);
    if (installed.status !== 0) installed = install(false);
    if (installed.status !== 0) throw new Error(`installing ${oldCommit}: ${installed.stdout}\n${installed.stderr}`);
    console.log(`[mixed-version] previous release ${oldLabel} installed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    receiver = await startReceiver();
    const everyOld = Object.fromEntries(['auth', 'tasks', 'notifier', 'webhook', 'scheduler', 'gateway'].map((n) => [n, oldRoot]));
    cluster = await startCluster({ OUTBOUND_ALLOW_LIST: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1,1,2,2,3', TOTP_ENCRYPTION_KEY: 'cd'.repeat(32), WEBHOOK_TIMEOUT_SECONDS: '3' }, { sourceRoots: everyOld });
    await cluster.ready(120_000);
    const pool = createPool(cluster.databaseUrl, createLogger('mixed-version', 'silent'));
    authorization = (await createUserWithApiKey(pool)).authorization;
    await pool.end();
    const setup = async (path: string, method: string, body: unknown, status: number) => {
      const res = await fetch(`${cluster.url}${path}`, { method, headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBe(status);
    };
    await setup('/api/settings/webhooks', 'POST', { url: `${receiver.url}/hook`, secret: 'mixed-version-secret' }, 201);
    await setup('/api/settings/notification-channels/http-alert', 'PUT', { config: { url: `${receiver.url}/alert` } }, 200);
  }, 300_000);

  afterAll(async () => {
    await cluster?.stop();
    receiver?.server.close();
    if (oldRoot) spawnSync('git', ['-C', root, 'worktree', 'remove', '--force', oldRoot]);
    if (oldDir) rmSync(oldDir, { recursive: true, force: true });
  });

  it('loses no task event and no reminder and parks nothing while services are upgraded in both orders and downgraded', async () => {
    const t0 = performance.now();
    /** `event task-id` of every acknowledged write's event, then of every committed one */
    const expected = new Set<string>();
    /** `title` of every task created with a reminder (never completed, so each one is due) */
    const dueReminders = new Set<string>();
    const statuses = new Map<number, number>();
    const serverErrors: string[] = [];
    let allowed503 = 0;
    let refused = 0;
    /** the service being restarted, while its process is down or starting */
    let restarting: ServiceName | undefined;
    let running = true;

    const call = async (method: string, path: string, body: unknown) => {
      const during = restarting;
      try {
        const res = await fetch(`${cluster.url}${path}`, { method, headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
        const json = res.status < 300 ? ((await res.json()) as { task: { id: string } }) : (await res.arrayBuffer(), undefined);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) {
          if (res.status === 503 && (during || restarting)) allowed503++;
          else serverErrors.push(`${method} ${path} → ${res.status} (restarting: ${during ?? restarting ?? 'nothing'})`);
        }
        return json;
      } catch (err) {
        // the gateway's own port is closed while it restarts (one replica): no answer, so nothing owed
        if (during === 'gateway' || restarting === 'gateway') refused++;
        else serverErrors.push(`${method} ${path} → ${(err as Error).message} (restarting: ${during ?? restarting ?? 'nothing'})`);
        return undefined;
      }
    };

    const writer = async (w: number) => {
      const open: string[] = [];
      for (let i = 0; running; i++) {
        const title = `mv ${w}-${i}`;
        // every fifth task carries a reminder a few seconds ahead; those stay open so each is due
        const reminder = i % 5 === 0;
        const body = reminder ? { title, reminders: [{ at: new Date(Date.now() + REMINDER_LEAD_MS).toISOString() }] } : { title };
        const created = await call('POST', '/api/tasks', body);
        if (created) {
          expected.add(`task.created ${created.task.id}`);
          if (reminder) dueReminders.add(title);
          else open.push(created.task.id);
        }
        if (i % 3 === 2 && open.length > 0) {
          const id = open.shift()!;
          if (await call('POST', `/api/tasks/${id}/complete`, {})) expected.add(`task.completed ${id}`);
        }
        // a steady pace (as chaos.test.ts's writers), not a spin of refused requests while a process is down
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const writers = [writer(0), writer(1)];

    const roll = async (name: ServiceName, to: string, step: string) => {
      const before = expected.size;
      restarting = name;
      await cluster.terminate(name);
      await cluster.start(name, to);
      await cluster.ready(120_000);
      restarting = undefined;
      // the load goes on through the new process before the next one rolls
      await until(() => expected.size > before + 5, `acknowledged writes after ${step} ${name}`, 60_000);
    };

    await until(() => expected.size > 10, 'first acknowledged writes', 60_000);
    for (const name of CONSUMERS) await roll(name, root, 'upgrading (consumers first)');
    for (const name of CONSUMERS) await roll(name, oldRoot, 'downgrading');
    for (const name of [...PRODUCERS, ...CONSUMERS]) await roll(name, root, 'upgrading (producers first)');
    running = false;
    await Promise.all(writers);

    // a write can commit while its answer is lost (a process restarting in between): what the
    // database holds is owed its events and reminders as much as what was acknowledged
    const pool = createPool(cluster.databaseUrl, createLogger('mixed-version', 'silent'));
    const acknowledged = expected.size;
    const { rows: committed } = await pool.query<{ id: string; title: string; completed: boolean; reminded: boolean }>(
      `SELECT id, title, completed_at IS NOT NULL AS completed, reminders <> '[]'::jsonb AS reminded FROM tasks.tasks WHERE title LIKE 'mv %'`,
    );
    for (const task of committed) {
      expected.add(`task.created ${task.id}`);
      if (task.completed) expected.add(`task.completed ${task.id}`);
      if (task.reminded && !task.completed) dueReminders.add(task.title);
    }

    // reminders created last are due a few seconds after the load stops; events drain through retries
    const missingEvents = () => [...expected].filter((e) => !receiver.events.has(e));
    const missingReminders = () => [...dueReminders].filter((t) => ![...receiver.reminders].some((r) => r.includes(t)));
    await until(() => missingEvents().length === 0 && missingReminders().length === 0, 'every event at the webhook receiver and every reminder at the HTTP Alert channel', 120_000).catch(() => undefined);

    let parked = 0;
    try {
      const { rows } = await pool.query<{ schema: string }>(`SELECT table_schema AS schema FROM information_schema.tables WHERE table_name = 'dead_letters'`);
      for (const { schema } of rows) parked += Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".dead_letters`)).rows[0]!.n);
    } finally {
      await pool.end();
    }

    const lostEvents = missingEvents();
    const lostReminders = missingReminders();
    const seconds = ((performance.now() - t0) / 1000).toFixed(0);
    console.log(
      `[mixed-version] ${oldLabel} ↔ HEAD: events ${expected.size - lostEvents.length}/${expected.size} (${expected.size - acknowledged} committed unanswered) reminders ${dueReminders.size - lostReminders.length}/${dueReminders.size} ` +
        `5xx ${serverErrors.length} (503 during a restart ${allowed503}, refused while the gateway restarted ${refused}) parked ${parked} — ${seconds} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(lostEvents, 'task events lost').toEqual([]);
    expect(lostReminders, 'due reminders not sent').toEqual([]);
    expect(serverErrors, '5xx outside a restart').toEqual([]);
    expect(parked, 'events parked at the end').toBe(0);
    expect(dueReminders.size).toBeGreaterThan(0);
  }, 600_000);
});
