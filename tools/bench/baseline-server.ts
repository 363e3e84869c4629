/**
 * The HTTP baseline of the issue-18 rows: what a task create and a list cost with nothing but
 * node:http, pg and the minimal SQL for the same operation — the create is one statement inserting
 * the task and its outbox row, the list is the page query. No framework, no validation beyond
 * JSON.parse, callers told apart by their Bearer value in memory (no key lookup), no events
 * relayed. Our service is measured against this floor with the same load generator, over the
 * same kind of connection. A complete (POST /api/tasks/:id/complete, for tools/bench/sizing.ts) is
 * one statement too: the caller's open task marked done and its outbox row.
 *
 *   DATABASE_URL=… PORT=… node tools/bench/baseline-server.ts   (the database needs the tasks migrations)
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import pg from 'pg';
import { BASELINE_COMPLETE, BASELINE_CREATE, BASELINE_LIST, baselineCreateValues } from './lib/baseline-sql.ts';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_MAX ?? 10) });
const users = new Map<string, string>();
let order = 0;

function userOf(req: IncomingMessage): string {
  const key = req.headers.authorization ?? '';
  let id = users.get(key);
  if (!id) users.set(key, (id = randomUUID()));
  return id;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const user = userOf(req);
  if (req.method === 'POST' && req.url === '/api/tasks') {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const b = JSON.parse(raw) as { title: string; type?: string; priority?: string };
    const { rows } = await pool.query({ name: 'create', text: BASELINE_CREATE, values: baselineCreateValues(user, b.title, order++, b.type, b.priority) });
    return send(res, 201, { task: rows[0] });
  }
  const complete = req.method === 'POST' ? /^\/api\/tasks\/([0-9a-f-]{36})\/complete$/.exec(req.url ?? '') : null;
  if (complete) {
    req.resume(); // the body ({}) is not read
    await new Promise((r) => req.once('end', r));
    const { rows } = await pool.query({ name: 'complete', text: BASELINE_COMPLETE, values: [complete[1], user, randomUUID()] });
    return rows[0] ? send(res, 200, { task: rows[0] }) : send(res, 404, { error: 'not found' });
  }
  if (req.method === 'GET' && req.url?.startsWith('/api/tasks')) {
    const { rows } = await pool.query({ name: 'list', text: BASELINE_LIST, values: [user] });
    return send(res, 200, { tasks: rows, total: rows.length });
  }
  if (req.url === '/api/health') return send(res, 200, { status: 'ok' });
  send(res, 404, { error: 'not found' });
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => send(res, 500, { error: String(err) }));
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end();
});
