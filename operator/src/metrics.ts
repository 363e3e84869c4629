/**
 * The operator's Prometheus metrics (docs/observability.md), served at `GET /metrics` on its health
 * port. One registry per operator replica (tests run two replicas in one process).
 */
import client from 'prom-client';

export interface OperatorMetrics {
  registry: client.Registry;
  /** one reconcile of one TaskService finished */
  reconciled(outcome: 'ok' | 'error', seconds: number): void;
}

export function createOperatorMetrics(read: { leader(): boolean; queueDepth(): number }): OperatorMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const total = new client.Counter({ name: 'tasksvc_operator_reconciles_total', help: 'TaskService reconciles finished by this replica, by outcome (ok, error: retried with backoff).', labelNames: ['outcome'], registers: [registry] });
  const duration = new client.Histogram({
    name: 'tasksvc_operator_reconcile_duration_seconds',
    help: 'Time one TaskService reconcile took, by outcome.',
    labelNames: ['outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  for (const outcome of ['ok', 'error']) total.inc({ outcome }, 0);
  new client.Gauge({
    name: 'tasksvc_operator_queue_depth',
    help: 'TaskService keys waiting in the work queue (0 on a standby replica).',
    registers: [registry],
    collect() {
      this.set(read.queueDepth());
    },
  });
  new client.Gauge({
    name: 'tasksvc_operator_leader',
    help: '1 while this replica leads and its controller runs, else 0.',
    registers: [registry],
    collect() {
      this.set(read.leader() ? 1 : 0);
    },
  });
  return {
    registry,
    reconciled(outcome, seconds) {
      total.inc({ outcome });
      duration.observe({ outcome }, seconds);
    },
  };
}
