/** The operator's environment, parsed once (the only reader of process.env in the operator). */
import { hostname } from 'node:os';
import { z } from 'zod';

const int = (fallback: number, min: number, max: number) =>
  z.preprocess((v) => (v === undefined || v === '' ? String(fallback) : v), z.string().regex(/^\d+$/, 'must be an integer').transform(Number).pipe(z.number().min(min).max(max)));

export const DEFAULT_API_TIMEOUT_SECONDS = 30;

const schema = z.object({
  /** namespace of the leader-election Lease (the operator's own; the Downward API sets it) */
  POD_NAMESPACE: z.string().min(1).default('default'),
  /** this replica's identity in the Lease */
  POD_NAME: z.string().min(1).default(hostname()),
  LEASE_NAME: z.string().min(1).default('taskservice-operator'),
  LEADER_ELECT: z.enum(['true', 'false']).default('true').transform((v) => v === 'true'),
  LEASE_DURATION_SECONDS: int(15, 2, 300),
  /** liveness/readiness HTTP port, served by every replica */
  HEALTH_PORT: int(8081, 0, 65535),
  WORKERS: int(2, 1, 16),
  /** an API request unanswered this long is given up and retried (watches excepted) */
  API_TIMEOUT_SECONDS: int(DEFAULT_API_TIMEOUT_SECONDS, 1, 300),
  /**
   * Namespaced mode: a comma-separated list of namespaces the operator watches (and, in the chart, the
   * only ones its Roles reach). Unset or empty: every namespace (a ClusterRole).
   */
  WATCH_NAMESPACES: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a comma-separated list of namespace names')
    .transform((v) => [...new Set(v.split(','))])
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Set by Kubernetes in every pod: the operator runs inside the cluster, where the gateways' Service
   * names resolve, so it asks their /api/health whether the services reach the database (Database).
   */
  KUBERNETES_SERVICE_HOST: z.string().optional(),
});

export type OperatorConfig = z.infer<typeof schema>;

export function loadOperatorConfig(env: Record<string, string | undefined> = process.env): OperatorConfig {
  const r = schema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (r.success) return r.data;
  throw new Error(`Invalid operator configuration:\n${r.error.issues.map((i) => `  - ${String(i.path[0])}: ${i.message}`).join('\n')}`);
}
