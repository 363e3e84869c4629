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
    scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind?: number; attributes?: KeyValue[]; status?: { code?: number } }[] }[];
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

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
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
            r.spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind ?? 0, service, attributes: flatten(s.attributes), statusCode: s.status?.code ?? 0 });
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
  return r;
}
