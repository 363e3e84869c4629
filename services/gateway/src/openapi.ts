import { EXPORTS_PER_HOUR, healthResponse, routes as allRoutes, secureSessionCookies, sessionCookieName, userExportJsonSchema, type AnyRoute } from '@tasksvc/proto';
import { VERSION } from '@tasksvc/runtime';
import { z } from 'zod';
import type { GatewayDeps } from './deps.ts';
import type { GatewayExtension } from './deps.ts';

/**
 * OpenAPI 3.1 for every declared route, generated from the same zod schemas the gateway validates
 * with (so the document cannot drift from what is enforced), plus a small self-contained docs page.
 */

type JsonSchema = Record<string, unknown>;

const errorBody: JsonSchema = {
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'string', description: 'stable error code, e.g. VALIDATION_FAILED, TASKS_NOT_FOUND' },
    message: { type: 'string' },
    issues: { type: 'array', items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string', description: 'e.g. body.title' }, message: { type: 'string' } } } },
  },
};

/** JSON Schema of one side of a zod schema; anything zod cannot express becomes "any" rather than failing the document. */
function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  try {
    const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    delete out.$schema;
    return out;
  } catch {
    return {};
  }
}

function parameters(schema: z.ZodType, where: 'path' | 'query'): JsonSchema[] {
  const s = toSchema(schema, 'input');
  const props = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, p]) => {
    const { description, ...rest } = p;
    return { name, in: where, required: where === 'path' || required.has(name), schema: rest, ...(description ? { description } : {}) };
  });
}

const accepts = (schema: z.ZodType, v: unknown) => schema.safeParse(v).success;

function operation(route: AnyRoute): JsonSchema {
  const op: JsonSchema = {
    operationId: route.rpc.subject.replace(/[^A-Za-z0-9]+/g, '_'),
    summary: route.summary,
    tags: [route.tag],
    security: route.auth === 'none' ? [] : [{ sessionCookie: [] }, { bearerApiKey: [] }],
  };
  const params = [...parameters(route.params, 'path'), ...parameters(route.query, 'query')];
  if (params.length > 0) op.parameters = params;
  const bodyless = route.method === 'GET' || route.method === 'DELETE';
  if (!bodyless) op.requestBody = { required: !accepts(route.body, undefined), content: { 'application/json': { schema: toSchema(route.body, 'input') } } };
  const ok =
    route.kind === 'raw'
      ? { description: 'OK', content: { [route.path.startsWith('/api/calendar') ? 'text/calendar' : 'text/plain']: { schema: { type: 'string' } } } }
      : route.status === 204
        ? { description: 'No Content' }
        : { description: 'OK', content: { 'application/json': { schema: toSchema(route.response, 'output') } } };
  const err = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const responses: JsonSchema = { [String(route.status)]: ok, '400': err('Invalid input; `issues` name each field') };
  if (route.auth !== 'none') Object.assign(responses, { '401': err('Not signed in'), '403': err('Read-only API key on a write, missing second factor, or not an admin') });
  if (route.path.includes(':')) responses['404'] = err('Not found (or not yours)');
  op.responses = responses;
  return op;
}

/** The export format's JSON Schema as a component (its own `$schema` is the document's dialect). */
function userExportSchema(): JsonSchema {
  const { $schema: _dialect, ...schema } = userExportJsonSchema();
  return schema;
}

/** The two exports stream from the gateway itself (user-export.ts), so they are not among the forwarded routes. */
function exportPaths(): Record<string, Record<string, JsonSchema>> {
  const err = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const common = {
    tags: ['Your data'],
    security: [{ sessionCookie: [] }, { bearerApiKey: [] }],
  };
  const failures = { '401': err('Not signed in'), '429': err(`More than ${EXPORTS_PER_HOUR} exports in the hour (Retry-After says when to come back)`) };
  return {
    '/api/user/export': {
      get: {
        ...common,
        operationId: 'user_export',
        summary: `Everything the user owns as one JSON document (attachment \`<app>-export-YYYY-MM-DD.json\`), streamed; ${EXPORTS_PER_HOUR} exports per hour`,
        responses: { '200': { description: 'The export (docs/moving.md)', content: { 'application/json': { schema: { $ref: '#/components/schemas/UserExport' } } } }, ...failures },
      },
    },
    '/api/user/export.ics': {
      get: {
        ...common,
        operationId: 'user_export_ics',
        summary: `Every task as an iCalendar VTODO (RFC 5545; attachment \`<app>-export-YYYY-MM-DD.ics\`), streamed; counts against the same ${EXPORTS_PER_HOUR} exports per hour`,
        responses: { '200': { description: 'VCALENDAR with a VTIMEZONE and one VTODO per task', content: { 'text/calendar': { schema: { type: 'string' } } } }, ...failures },
      },
    },
  };
}

export function buildOpenApiDocument(routes: AnyRoute[], publicUrl: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {
    '/api/health': {
      get: {
        operationId: 'health',
        summary: 'Health: 200 ok, or 503 error when the database is unreachable',
        tags: ['Health'],
        security: [],
        responses: { '200': { description: 'OK', content: { 'application/json': { schema: toSchema(healthResponse, 'output') } } }, '503': { description: 'Database unreachable', content: { 'application/json': { schema: toSchema(healthResponse, 'output') } } } },
      },
    },
  };
  Object.assign(paths, exportPaths());
  for (const route of routes) {
    const path = route.path.replace(/:([A-Za-z_]\w*)/g, '{$1}');
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Task Service API', version: VERSION, description: 'Every route the gateway serves. Errors are `{ code, message, issues? }`.' },
    servers: [{ url: publicUrl }],
    tags: [...new Set(['Health', 'Your data', ...routes.map((r) => r.tag)])].map((name) => ({ name })),
    paths,
    components: {
      schemas: { Error: errorBody, UserExport: userExportSchema() },
      securitySchemes: {
        // the real cookie name (it was given as `session`, which no browser ever sends)
        sessionCookie: { type: 'apiKey', in: 'cookie', name: sessionCookieName(secureSessionCookies(publicUrl)), description: 'browser session, set by signing in' },
        bearerApiKey: { type: 'http', scheme: 'bearer', description: 'API key; read-only keys may only GET' },
      },
    },
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A dependency-free reference page: one section per tag, one row per operation. */
export function renderDocsPage(doc: JsonSchema): string {
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, JsonSchema>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = ((op.tags as string[] | undefined) ?? ['Other'])[0]!;
      const auth = (op.security as unknown[]).length === 0 ? 'public' : 'signed in';
      const row = `<tr><td class="m ${method}">${method.toUpperCase()}</td><td><code>${escapeHtml(path)}</code></td><td>${escapeHtml(typeof op.summary === 'string' ? op.summary : '')}</td><td>${auth}</td></tr>`;
      byTag.set(tag, [...(byTag.get(tag) ?? []), row]);
    }
  }
  const sections = [...byTag].map(([tag, rows]) => `<h2>${escapeHtml(tag)}</h2><table><tr><th>Method</th><th>Path</th><th>What it does</th><th>Access</th></tr>${rows.join('')}</table>`).join('');
  const info = doc.info as { title: string; version: string };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(info.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}td,th{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}.m{font-weight:600;font-family:monospace}.get{color:#0a6}.post{color:#06c}.patch,.put{color:#a60}.delete{color:#c22}</style></head>
<body><h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1><p>Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1). Authenticate with the session cookie or <code>Authorization: Bearer &lt;API key&gt;</code>; read-only keys may only GET. Errors are JSON <code>{ code, message, issues? }</code>.</p>${sections}</body></html>`;
}

export const registerOpenApi: GatewayExtension = (app, deps: GatewayDeps) => {
  // Built once, on first use (the route table is fixed for the life of the process): building it at
  // start cost 0.4-0.7 s of CPU, and the document as objects 1.8 MB of heap; as text it is 0.35 MB (issue 58).
  let built: { json: string; page: string } | undefined;
  const docs = () => {
    if (!built) {
      const doc = buildOpenApiDocument(deps.routes ?? allRoutes, deps.config.PUBLIC_APP_URL);
      built = { json: JSON.stringify(doc), page: renderDocsPage(doc) };
    }
    return built;
  };
  app.get('/api/openapi.json', async (_req, reply) => reply.type('application/json; charset=utf-8').header('cache-control', 'public, max-age=300').send(docs().json));
  app.get('/api-docs', async (_req, reply) => reply.type('text/html; charset=utf-8').header('cache-control', 'public, max-age=300').send(docs().page));
};
