import { Readable } from 'node:stream';
import {
  exportAccountRpc,
  exportCompletionsPageRpc,
  exportIcsHeadRpc,
  exportIcsPageRpc,
  exportNotificationsRpc,
  exportTasksPageRpc,
  exportTasksPartRpc,
  exportWebhooksRpc,
  EXPORTS_PER_HOUR,
  USER_EXPORT_FORMAT,
  USER_EXPORT_VERSION,
  type Identity,
} from '@tasksvc/proto';
import { VERSION } from '@tasksvc/runtime';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayDeps, GatewayExtension } from './deps.ts';
import { authorize, resolveIdentity } from './identity.ts';
import { enforceHourlyLimit, type HourlyLimit } from './rate-limit.ts';

/**
 * GET /api/user/export and /api/user/export.ics: the gateway asks each service for its part of the
 * user's data over the bus and writes the document as the parts come. Tasks and completions come in
 * pages (a bus reply is one message), each written to the response before the next is asked for, and
 * only when the client has taken the previous one (the stream's back-pressure), so the gateway holds
 * one page at a time whatever the account's size (tools/bench/export.ts measures it).
 *
 * Everything that can fail cleanly (sign-in, the limit, the services' first answers) fails before the
 * first byte, as a JSON error. A page that fails later cuts the response off (no closing chunk): the
 * client sees a failed download, never a truncated file that looks whole.
 */

/** Rows asked for per page (the services also cut a page at 256 KiB of JSON). */
export const EXPORT_PAGE_ROWS = 500;
const ASK_MS = 30_000;
/** The name files carry: `<app>-export-YYYY-MM-DD.json`. */
export const EXPORT_FILE_PREFIX = 'task-service-export';
/** The JSON and the iCalendar export count against one limit. */
export const EXPORT_LIMIT: HourlyLimit = { bucket: 'user.export', limit: EXPORTS_PER_HOUR, what: `at most ${EXPORTS_PER_HOUR} exports per hour` };

/** Today in the user's zone, for the file name. */
function localToday(zone: string): string {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
  } catch {
    return new Date().toISOString().slice(0, 10);
  }
}

async function caller(req: FastifyRequest, deps: GatewayDeps, reply: FastifyReply): Promise<Identity> {
  const user = await resolveIdentity(req, deps.bus, deps.config);
  authorize('user', 'GET', user);
  await enforceHourlyLimit(EXPORT_LIMIT, user, deps, reply);
  return user!;
}

/** Pages of one kind until the last, each asked for when the stream wants more. */
async function* pages<T>(ask: (after: string | null) => Promise<{ items: T[]; next: string | null }>): AsyncGenerator<T[]> {
  let after: string | null = null;
  do {
    const page = await ask(after);
    yield page.items;
    after = page.next;
  } while (after !== null);
}

/** One JSON value per line: the client counts lines for its progress (X-Export-Tasks and X-Export-Completions say how many to expect). */
async function* jsonArray<T>(source: AsyncGenerator<T[]>): AsyncGenerator<string> {
  let first = true;
  for await (const items of source) {
    if (items.length === 0) continue;
    yield (first ? '\n' : ',\n') + items.map((i) => JSON.stringify(i)).join(',\n');
    first = false;
  }
  yield '\n';
}

export const registerUserExport: GatewayExtension = (app, deps) => {
  const { bus } = deps;
  const ask = { timeoutMs: ASK_MS };

  app.get('/api/user/export', async (req, reply) => {
    const user = await caller(req, deps, reply);
    const userId = user.id;
    const o = { ...ask, requestId: String(req.id) };
    const [account, part, notifications, hooks] = await Promise.all([
      bus.request(exportAccountRpc, { userId }, o),
      bus.request(exportTasksPartRpc, { userId }, o),
      bus.request(exportNotificationsRpc, { userId }, o),
      bus.request(exportWebhooksRpc, { userId }, o),
    ]);
    const head = {
      format: USER_EXPORT_FORMAT,
      version: USER_EXPORT_VERSION,
      exportedAt: new Date().toISOString(),
      generator: { app: 'Task Service', version: VERSION },
      account,
      settings: part.settings,
      game: part.game,
      topics: part.topics,
      notifications,
      webhooks: hooks.webhooks,
    };
    async function* body(): AsyncGenerator<string> {
      // the head's closing brace is left off: tasks and completions follow inside the same object
      yield `${JSON.stringify(head).slice(0, -1)},\n"tasks":[`;
      yield* jsonArray(pages(async (after) => {
        const p = await bus.request(exportTasksPageRpc, { userId, after, limit: EXPORT_PAGE_ROWS }, o);
        return { items: p.tasks, next: p.next };
      }));
      yield '],\n"completions":[';
      yield* jsonArray(pages(async (after) => {
        const p = await bus.request(exportCompletionsPageRpc, { userId, after, limit: EXPORT_PAGE_ROWS }, o);
        return { items: p.completions, next: p.next };
      }));
      yield ']}\n';
    }
    return reply
      .header('content-type', 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${EXPORT_FILE_PREFIX}-${localToday(part.settings.timezone)}.json"`)
      .header('cache-control', 'no-store')
      .header('x-export-tasks', String(part.taskCount))
      .header('x-export-completions', String(part.completionCount))
      .send(Readable.from(body(), { objectMode: false }));
  });

  app.get('/api/user/export.ics', async (req, reply) => {
    const user = await caller(req, deps, reply);
    const userId = user.id;
    const o = { ...ask, requestId: String(req.id) };
    const head = await bus.request(exportIcsHeadRpc, { userId }, o);
    async function* body(): AsyncGenerator<string> {
      yield head.text;
      const written = [head.zone];
      let after: string | null = null;
      do {
        const page: { text: string; zones: string[]; next: string | null } = await bus.request(exportIcsPageRpc, { userId, after, limit: EXPORT_PAGE_ROWS, zonesWritten: written }, o);
        written.push(...page.zones);
        if (page.text) yield page.text;
        after = page.next;
      } while (after !== null);
      yield 'END:VCALENDAR\r\n';
    }
    return reply
      .header('content-type', 'text/calendar; charset=utf-8')
      .header('content-disposition', `attachment; filename="${EXPORT_FILE_PREFIX}-${localToday(head.zone)}.ics"`)
      .header('cache-control', 'no-store')
      .header('x-export-tasks', String(head.taskCount))
      .send(Readable.from(body(), { objectMode: false }));
  });
};
