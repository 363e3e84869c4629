import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A minimal OTLP/HTTP trace receiver for tests: accepts `POST /v1/traces` in the OTLP JSON encoding
 * (what @opentelemetry/exporter-trace-otlp-http sends) and keeps every span, flattened with its
 * resource's service.name. Anything else is refused, so an exporter misconfigured for protobuf fails
 * loudly instead of silently recording nothing.
 */

/** OTLP JSON span kinds (opentelemetry-proto Span.SpanKind). */
export const OTLP_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export interface RecordedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span */
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, string | number | boolean>;
  /** 2 = error (opentelemetry-proto Status.StatusCode) */
  statusCode: number;
  /** start and end, in milliseconds since the epoch */
  startMs: number;
  endMs: number;
}

export interface OtlpReceiver {
  /** the value for OTEL_EXPORTER_OTLP_ENDPOINT */
  url: string;
  spans: RecordedSpan[];
  /** export requests refused (wrong path or encoding); a test expects none */
  refused: string[];
  close(): Promise<void>;
}

// The parts of ExportTraceServiceRequest (OTLP JSON) that tests read.
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind?: number; attributes?: KeyValue[]; status?: { code?: number }; startTimeUnixNano?: string | number; endTimeUnixNano?: string | number }[];
    }[];
  }[];
}

function flatten(attributes: KeyValue[] = []): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes) {
    const v = value?.stringValue ?? value?.boolValue ?? value?.doubleValue ?? (value?.intValue !== undefined ? Number(value.intValue) : undefined);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** OTLP JSON carries 64-bit nanoseconds as a string (or a number) */
const nanosToMs = (v: string | number | undefined) => (v === undefined ? 0 : Number(BigInt(v) / 1000n) / 1000);

const KIND_NAMES = ['', 'internal', 'server', 'client', 'producer', 'consumer'];

/**
 * One trace as an indented tree (children in start order), one line per span: name, kind, service,
 * start offset and duration. For failure messages and docs/observability.md's picture.
 */
export function renderTrace(spans: RecordedSpan[]): string {
  const ids = new Set(spans.map((s) => s.spanId));
  const roots = spans.filter((s) => !ids.has(s.parentSpanId)).sort((a, b) => a.startMs - b.startMs);
  const t0 = Math.min(...spans.map((s) => s.startMs));
  const lines: string[] = [];
  const walk = (s: RecordedSpan, prefix: string, last: boolean, depth: number) => {
    const label = `${depth === 0 ? '' : `${prefix}${last ? '└─ ' : '├─ '}`}${s.name}`;
    lines.push(`${label.padEnd(58)} ${KIND_NAMES[s.kind]!.padEnd(9)} ${s.service.padEnd(13)} +${(s.startMs - t0).toFixed(1).padStart(6)} ms ${(s.endMs - s.startMs).toFixed(1).padStart(6)} ms`);
    const children = spans.filter((c) => c.parentSpanId === s.spanId).sort((a, b) => a.startMs - b.startMs);
    children.forEach((c, i) => walk(c, depth === 0 ? '' : `${prefix}${last ? '   ' : '│  '}`, i === children.length - 1, depth + 1));
  };
  for (const r of roots) walk(r, '', true, 0);
  return lines.join('\n');
}

/** `keep: false` (benchmarks): accept and count spans without keeping them. */
export async function startOtlpReceiver(opts: { keep?: boolean } = {}): Promise<OtlpReceiver & { received(): number }> {
  let received = 0;
  const r: OtlpReceiver = { url: '', spans: [], refused: [], close: async () => {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = req.headers['content-type'] ?? '';
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !type.startsWith('application/json')) {
        r.refused.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      let body: ExportRequest;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
      } catch {
        r.refused.push('malformed JSON');
        res.writeHead(400).end();
        return;
      }
      for (const rs of body.resourceSpans ?? []) {
        const service = String(flatten(rs.resource?.attributes)['service.name'] ?? '');
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            received++;
            if (opts.keep === false) continue;
            r.spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind ?? 0,
              service,
              attributes: flatten(s.attributes),
              statusCode: s.status?.code ?? 0,
              startMs: nanosToMs(s.startTimeUnixNano),
              endMs: nanosToMs(s.endTimeUnixNano),
            });
          }
        }
      }
      // an empty ExportTraceServiceResponse: everything accepted
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = async () => {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  };
  return { ...r, received: () => received };
}
