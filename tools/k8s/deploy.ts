/**
 * Puts the Task Service on a running one-node cluster (node.ts): the operator chart with the locally
 * built images, and a TaskService whose pods reach the caller's PostgreSQL and NATS through TCP
 * forwarders on the host's end of the node's veth (HOST_IP; until the chart provides them in-cluster).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_VERSION, KIND } from '../../operator/src/crd.ts';
import { tcpProxy, type TcpProxy } from '../testenv/tcp-proxy.ts';
import { IMAGE_TAG, imageName, NATS_IMAGE } from './images.ts';
import type { NodeCluster } from './node.ts';
import { REPO } from './paths.ts';

export const OPERATOR_NAMESPACE = 'tasksvc-system';
export const APP_NAMESPACE = 'tasks';
export const TS_NAME = 'task-service';

/** Listens on host (a free port) and pipes every connection to target: how pods reach host listeners. */
export const forward = (host: string, target: { host: string; port: number }): Promise<TcpProxy> => tcpProxy(host, target);

export async function installOperator(cluster: NodeCluster): Promise<void> {
  await cluster.helm(
    'install', 'tso', join(REPO, 'charts', 'task-service-operator'),
    '--namespace', OPERATOR_NAMESPACE, '--create-namespace',
    '--set', `image.full=${imageName('operator')}`,
    '--set', 'image.pullPolicy=Never',
    '--set', 'replicaCount=1',
    '--wait', '--timeout', '5m',
  );
}

export interface AppOptions {
  databaseUrl: string;
  natsUrl: string;
  replicas?: Partial<Record<'gateway' | 'auth' | 'tasks' | 'notifier' | 'webhook' | 'scheduler', number>>;
  config?: Record<string, string>;
  /** full image references per component (TaskService spec.image.overrides) */
  overrides?: Record<string, string>;
  /** TaskService spec.firewall (off when absent) */
  firewall?: Record<string, unknown>;
}

/** The TaskService object (spec per operator/src/crd.ts), images from build-images.sh. */
export function taskService(opts: AppOptions): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: TS_NAME, namespace: APP_NAMESPACE },
    spec: {
      version: IMAGE_TAG,
      image: { registry: 'localhost', pullPolicy: 'Never', ...(opts.overrides ? { overrides: opts.overrides } : {}) },
      // what this one node can hold: the API path needs gateway, auth and tasks
      replicas: { gateway: 2, auth: 1, tasks: 1, notifier: 0, webhook: 0, scheduler: 0, ...opts.replicas },
      resources: { memory: '384Mi', cpu: '300m' },
      publicUrl: 'http://tasks.localhost',
      natsUrl: opts.natsUrl,
      config: { NATS_ALLOW_ANONYMOUS: 'true', DISABLE_UPDATE_CHECK: 'true', ...opts.config },
      secrets: {
        databaseUrl: { name: 'task-service-secrets', key: 'DATABASE_URL' },
        authSecret: { name: 'task-service-secrets', key: 'AUTH_SECRET' },
        cronSecret: { name: 'task-service-secrets', key: 'CRON_SECRET' },
      },
      cron: { suspend: true },
      ...(opts.firewall ? { firewall: opts.firewall } : {}),
    },
  };
}

export async function applyTaskService(cluster: NodeCluster, opts: AppOptions): Promise<void> {
  await cluster.kubectl('create', 'namespace', APP_NAMESPACE).catch((e: Error) => {
    if (!/AlreadyExists/.test(e.message)) throw e;
  });
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'task-service-secrets', namespace: APP_NAMESPACE },
    stringData: { DATABASE_URL: opts.databaseUrl, AUTH_SECRET: randomBytes(24).toString('hex'), CRON_SECRET: randomBytes(16).toString('hex') },
  };
  await kubectlApply(cluster, secret);
  await kubectlApply(cluster, taskService(opts));
}

export async function kubectlApply(cluster: NodeCluster, obj: unknown): Promise<string> {
  const file = join(cluster.dir, `apply-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(obj));
  return cluster.kubectl('apply', '-f', file);
}

export interface DefaultsOptions {
  /** spec.version (the services' image tag) */
  version?: string;
  replicas?: AppOptions['replicas'];
  /** spec.nats.replicas (1 or 3) */
  natsReplicas?: 1 | 3;
  /** spec.database.managed.deletionPolicy (absent: the default, Retain) */
  deletionPolicy?: 'Retain' | 'Delete';
  config?: Record<string, string>;
}

/**
 * A TaskService on the operator's defaults (issue 59): no referenced Secrets (the operator generates
 * AUTH_SECRET, CRON_SECRET, the key ring and NATS credentials), the operator-run NATS (StatefulSet on a
 * volume of the default StorageClass; its image built from Debian's nats-server), a managed database
 * (a CloudNativePG Cluster, served on this cluster by cnpg-standin.ts; deletionPolicy left at its
 * default, Retain, unless opts.deletionPolicy) and the cron job not suspended. Only what one node can hold and the local images differ.
 */
export function defaultsTaskService(opts: DefaultsOptions = {}): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: TS_NAME, namespace: APP_NAMESPACE },
    spec: {
      version: opts.version ?? IMAGE_TAG,
      image: { registry: 'localhost', pullPolicy: 'Never' },
      // every service runs (a service at 0 replicas makes Ready=False); two gateways for the rollouts
      replicas: { gateway: 2, auth: 1, tasks: 1, notifier: 1, webhook: 1, scheduler: 1, ...opts.replicas },
      // small CPU requests (limits above them): 7 service pods and a rollout's surge fit the 2-core node
      serviceResources: Object.fromEntries(
        ['gateway', 'auth', 'tasks', 'notifier', 'webhook', 'scheduler'].map((s) => [s, { requests: { cpu: '50m', memory: '256Mi' }, limits: { cpu: '1', memory: '384Mi' } }]),
      ),
      publicUrl: 'http://tasks.localhost',
      nats: { image: NATS_IMAGE, storage: '1Gi', ...(opts.natsReplicas ? { replicas: opts.natsReplicas } : {}) },
      database: { managed: { instances: 1, storage: '1Gi', ...(opts.deletionPolicy ? { deletionPolicy: opts.deletionPolicy } : {}) } },
      config: { DISABLE_UPDATE_CHECK: 'true', ...opts.config },
    },
  };
}

export async function applyDefaultsTaskService(cluster: NodeCluster, opts: DefaultsOptions = {}): Promise<void> {
  await cluster.kubectl('create', 'namespace', APP_NAMESPACE).catch((e: Error) => {
    if (!/AlreadyExists/.test(e.message)) throw e;
  });
  await kubectlApply(cluster, defaultsTaskService(opts));
}
