import { BoundedLabel, busMetrics, outcomeOfError } from '../metrics.ts';
import { inSpan } from '../tracing.ts';
import type { Bus } from './types.ts';

/** Event subjects arrive from the server (a consumer's filter may match many); at most this many distinct ones are labelled. */
const eventSubjects = new BoundedLabel(64);

/**
 * Metrics and trace spans for either transport (docs/observability.md): request latency and outcome
 * on the caller's side, events published and consumed. Handled requests are recorded where both
 * transports answer them (envelope.ts `handleRequest`). The transports carry the active span's
 * traceparent (a NATS header; in-process the context itself), so handlers and consumers join the trace.
 */
export function instrumentBus(bus: Bus): Bus {
  /** A request (either kind) in its client span, its latency and outcome recorded. */
  const requesting = <R>(subject: string, send: () => Promise<R>): Promise<R> => {
    const t0 = performance.now();
    return inSpan(`request ${subject}`, 'client', { 'messaging.system': bus.kind, 'messaging.destination.name': subject }, send).then(
      (res) => {
        busMetrics.requests.observe({ subject, outcome: 'ok' }, (performance.now() - t0) / 1000);
        return res;
      },
      (err: unknown) => {
        busMetrics.requests.observe({ subject, outcome: outcomeOfError(err) }, (performance.now() - t0) / 1000);
        throw err;
      },
    );
  };
  return {
    kind: bus.kind,
    request: (rpc, payload, opts) => requesting(rpc.subject, () => bus.request(rpc, payload, opts)),
    requestJson: (rpc, payload, opts) => requesting(rpc.subject, () => bus.requestJson(rpc, payload, opts)),
    serve: (rpc, handler, opts) => bus.serve(rpc, handler, opts),
    publish(event, payload, msgId) {
      const attributes = { 'messaging.system': bus.kind, 'messaging.destination.name': event.subject, 'messaging.message.id': msgId };
      return inSpan(`publish ${event.subject}`, 'producer', attributes, () => bus.publish(event, payload, msgId)).then(
        () => busMetrics.published.inc({ subject: event.subject, outcome: 'ok' }),
        (err: unknown) => {
          busMetrics.published.inc({ subject: event.subject, outcome: 'failed' });
          throw err;
        },
      );
    },
    consume(event, handler, opts) {
      return bus.consume(
        event,
        (payload, meta) =>
          inSpan(
            `process ${eventSubjects.of(meta.subject)}`,
            'consumer',
            { 'messaging.system': bus.kind, 'messaging.destination.name': meta.subject, 'messaging.message.id': meta.msgId, 'messaging.consumer.group.name': opts.durable },
            () => handler(payload, meta),
            { parent: meta.traceparent },
          ).then(
            () => busMetrics.consumed.inc({ subject: eventSubjects.of(meta.subject), durable: opts.durable, outcome: 'ok' }),
            (err: unknown) => {
              busMetrics.consumed.inc({ subject: eventSubjects.of(meta.subject), durable: opts.durable, outcome: 'failed' });
              throw err;
            },
          ),
        opts,
      );
    },
    broadcast: (subject, payload) => bus.broadcast(subject, payload),
    onBroadcast: (subject, handler, missed) => bus.onBroadcast(subject, handler, missed),
    flush: () => bus.flush(),
    close: () => bus.close(),
  };
}
